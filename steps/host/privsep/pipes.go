package privsep

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// pipes are the descriptors between Run and one child. Run creates all of
// them itself (none is left to os/exec) so that it knows every descriptor
// number the fork will rearrange, and can place the executable's descriptor
// where the rearrangement cannot overwrite it.
type pipes struct {
	devNull          *os.File // child's stdin
	outR, outW       *os.File // child's stdout
	errR, errW       *os.File // child's stderr
	resR, resW       *os.File // fd 3: messages, child → parent
	reqR, reqW       *os.File // fd 4: envelope, parent → child
	exe              *os.File // fd 5: the sealed executable, read-only
	childEndsClosed  bool
	parentEndsClosed bool
}

func openPipes(b *Binary) (p *pipes, err error) {
	p = &pipes{}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if p.exe, err = b.openReadOnly(); err != nil {
		return nil, err
	}
	if p.devNull, err = os.Open(os.DevNull); err != nil {
		return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	for _, pr := range []struct{ r, w **os.File }{{&p.outR, &p.outW}, {&p.errR, &p.errW}, {&p.resR, &p.resW}, {&p.reqR, &p.reqW}} {
		if *pr.r, *pr.w, err = os.Pipe(); err != nil {
			return nil, fmt.Errorf("create pipe: %w", err)
		}
	}
	return p, nil
}

// childFiles are the descriptors the child inherits.
func (p *pipes) childFiles() []*os.File {
	return []*os.File{p.devNull, p.outW, p.errW, p.resW, p.reqR, p.exe}
}

// execFD duplicates the binary's memfd to a close-on-exec descriptor above
// every number the fork may write: the child's slots 0..5, and the scratch
// numbers the runtime uses just above the highest descriptor it passes
// (syscall.forkAndExecInChild). The caller closes it.
func (p *pipes) execFD(b *Binary) (int, error) {
	files := p.childFiles()
	highest := len(files)
	for _, f := range files {
		highest = max(highest, int(f.Fd()))
	}
	fd, err := unix.FcntlInt(uintptr(b.fd()), unix.F_DUPFD_CLOEXEC, highest+2*len(files)+4)
	if err != nil {
		return -1, fmt.Errorf("duplicate the executable's descriptor: %w", err)
	}
	return fd, nil
}

// closeChildEnds closes the parent's copies of what the child inherited,
// so that the parent sees end of file when the child's side closes.
func (p *pipes) closeChildEnds() error {
	if p.childEndsClosed {
		return nil
	}
	p.childEndsClosed = true
	return closeAll(p.childFiles()...)
}

// closeParentEnds closes the parent's ends, ending any read or write on
// them.
func (p *pipes) closeParentEnds() error {
	if p.parentEndsClosed {
		return nil
	}
	p.parentEndsClosed = true
	return closeAll(p.outR, p.errR, p.resR, p.reqW)
}

func (p *pipes) close() error {
	return errors.Join(p.closeChildEnds(), p.closeParentEnds())
}

func closeAll(files ...*os.File) error {
	var errs []error
	for _, f := range files {
		if f != nil {
			if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
