package safefile

import (
	"errors"
	"fmt"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// Pending is a file written in pieces under a private name (a download's
// part file) and committed to its final name once complete: fsync, rename
// without replacing anything, directory fsync. It survives interruption:
// OpenPending reopens what an earlier run left, without truncating it.
type Pending struct {
	root  *Root
	rel   string
	full  string
	point string
	f     *os.File
}

// OpenPending opens the pending file rel under r read-write, creating it
// (mode 0600) if missing and keeping what it holds. It must be a regular
// file with one link owned by the effective uid; its mode is set to 0600.
// point names the failpoints of Commit (point+"-before-rename",
// point+"-after-rename"). r must stay open until the Pending is committed,
// discarded or closed.
func (r *Root) OpenPending(rel, point string) (*Pending, error) {
	full := r.Join(rel)
	fd, err := openBeneath(r.fd, rel, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0o600)
	if err != nil {
		return nil, openError("open", full, err)
	}
	if _, err := r.checkOpened(fd, rel, full, unix.S_IFREG, Expect{UID: os.Geteuid()}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.Fchmod(fd, 0o600); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("open %s: %w", full, err)
	}
	// Reads and writes of a regular file never block; clear O_NONBLOCK so
	// the runtime does not try to poll it.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("open %s: %w", full, err)
	}
	return &Pending{root: r, rel: rel, full: full, point: point, f: os.NewFile(uintptr(fd), full)}, nil
}

// File is the open pending file, owned by p.
func (p *Pending) File() *os.File { return p.f }

// Path is the pending file's full name.
func (p *Pending) Path() string { return p.full }

// Close closes the file and keeps it, to be resumed later.
func (p *Pending) Close() error {
	if p.f == nil {
		return nil
	}
	err := p.f.Close()
	p.f = nil
	return err
}

// Discard closes and removes the pending file.
func (p *Pending) Discard() error {
	p.Close()
	if err := p.root.Remove(p.rel); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Commit makes the pending file target (a name in the same directory):
// chmod mode, fsync, close, rename without replacing anything (or link and
// remove the pending name), fsync the directory. When target exists, the
// pending file is kept (closed) and the error matches os.ErrExist: the
// caller decides whether what is there is acceptable, and makes it durable
// (Durable) before relying on it.
func (p *Pending) Commit(target string, mode os.FileMode) error {
	return p.commit(target, mode, false)
}

// CommitReplace is Commit replacing whatever target names (rename(2)), for
// files that are rewritten whole rather than published once.
func (p *Pending) CommitReplace(target string, mode os.FileMode) error {
	return p.commit(target, mode, true)
}

func (p *Pending) commit(target string, mode os.FileMode, replace bool) error {
	tfull := p.root.Join(target)
	if p.f == nil {
		return fmt.Errorf("commit %s: %s is closed", tfull, p.full)
	}
	err := p.f.Chmod(mode)
	if err == nil {
		err = fsync(int(p.f.Fd()), p.full)
	}
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("commit %s: %w", tfull, err)
	}
	dirfd, base, err := p.root.parent(target)
	if err != nil {
		return fmt.Errorf("commit %s: %w", tfull, err)
	}
	defer unix.Close(dirfd)
	pdir, pbase := path.Split(p.rel)
	tdir, _ := path.Split(target)
	if pdir != tdir {
		return fmt.Errorf("commit %s: %s is in another directory", tfull, p.full)
	}
	Failpoint(p.point + "-before-rename")
	rename := renameNoReplace
	if replace {
		rename = func(dirfd int, from, to string) error { return unix.Renameat(dirfd, from, dirfd, to) }
	}
	if err := rename(dirfd, pbase, base); err != nil {
		return &os.PathError{Op: "commit", Path: tfull, Err: err}
	}
	// After a link(2) fallback the pending name is still there.
	unix.Unlinkat(dirfd, pbase, 0)
	Failpoint(p.point + "-after-rename")
	if err := fsync(dirfd, path.Dir(tfull)); err != nil {
		return fmt.Errorf("commit %s: sync directory: %w", tfull, err)
	}
	return nil
}
