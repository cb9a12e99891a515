package privsep

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// selfExe is the running executable, read through the kernel's link so that
// a file replaced on disk after start is never what is captured.
const selfExe = "/proc/self/exe"

// memfdName is the name the kernel shows for the captured copy, for example
// in /proc/<pid>/exe of the child ("/memfd:oac-node-install (deleted)").
const memfdName = "oac-node-install"

// seals make the captured copy immutable: no write, no resize, and no
// removal of the seals themselves.
const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE

// Binary is the installer's own executable, captured at start into a sealed
// memory file. Root runs the service-account child from it, never from a
// path the service account can write; the child writes its retained copy
// (the generation helper) from the same bytes. A Binary is safe for
// concurrent use until Close.
type Binary struct {
	f    *os.File // the sealed memfd, close-on-exec
	data []byte   // read-only shared mapping of f
	// sum is the SHA-256 of data, computed by the first SHA256 call.
	hashed sync.Once
	sum    [sha256.Size]byte
	closed sync.Once
}

// Capture reads the running executable once into a sealed memfd. Call it at start, before anything could replace the file on disk. The
// caller closes the Binary when no more children will be started.
func Capture() (*Binary, error) {
	src, err := os.Open(selfExe)
	if err != nil {
		return nil, fmt.Errorf("capture the running executable: %w", err)
	}
	defer src.Close()
	b, err := sealedCopy(src)
	if err != nil {
		return nil, fmt.Errorf("capture the running executable: %w", err)
	}
	return b, nil
}

// sealedCopy copies r into a new memfd, seals it and maps it read-only.
func sealedCopy(r io.Reader) (*Binary, error) {
	fd, err := memfdCreate()
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "memfd:"+memfdName)
	b, err := func() (*Binary, error) {
		if err := copyInto(f, r); err != nil {
			return nil, fmt.Errorf("copy into memfd: %w", err)
		}
		if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
			return nil, fmt.Errorf("seal memfd: %w", err)
		}
		// Executable, not readable, by other users: the kernel then
		// starts every child executed from it not dumpable, so that no
		// process of the service account can reach into it even before
		// the child's first instruction (harden).
		if err := f.Chmod(execOnlyMode); err != nil {
			return nil, fmt.Errorf("set the mode of memfd: %w", err)
		}
		return mapSealed(f, 0)
	}()
	if err != nil {
		f.Close()
		return nil, err
	}
	return b, nil
}

// execOnlyMode is the captured copy's mode: root reads it, every user may
// execute it, nobody else may read it.
const execOnlyMode = 0o711

// mapSealed checks that f is sealed and maps it read-only, with the extra
// mmap flags: the mapped bytes are exactly what runs. The Binary owns f.
func mapSealed(f *os.File, flags int) (*Binary, error) {
	got, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil {
		return nil, fmt.Errorf("read memfd seals: %w", err)
	}
	if got&seals != seals {
		return nil, fmt.Errorf("memfd seals %#x lack %#x", got, seals)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat memfd: %w", err)
	}
	if st.Size() == 0 {
		return nil, errors.New("the executable is empty")
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED|flags)
	if err != nil {
		return nil, fmt.Errorf("map memfd: %w", err)
	}
	return &Binary{f: f, data: data}, nil
}

// inheritedBinary is the sealed copy as the child received it on
// binaryFD (the account cannot read it through /proc/self/exe), on a
// descriptor of its own, checked to be the file this process is running.
// The caller closes it.
func inheritedBinary() (*Binary, error) {
	fd, err := unix.FcntlInt(binaryFD, unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("the installer's executable on descriptor %d: %w", binaryFD, err)
	}
	f := os.NewFile(uintptr(fd), "memfd:"+memfdName)
	if err := runningFile(fd); err != nil {
		f.Close()
		return nil, fmt.Errorf("the installer's executable on descriptor %d: %w", binaryFD, err)
	}
	// The child maps it to read all of it (the retained helper and its
	// check): populated at once, not a page fault per page.
	b, err := mapSealed(f, unix.MAP_POPULATE)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("the installer's executable on descriptor %d: %w", binaryFD, err)
	}
	return b, nil
}

// runningFile checks that fd is open on the very file this process runs
// (the inode /proc/self/exe names; a process may always stat its own
// executable, even one it may not read). The child runs only the parent's
// sealed copy, so a sealed fd naming that inode holds exactly the bytes
// the parent captured; no digest of them is needed.
func runningFile(fd int) error {
	var held, exe unix.Stat_t
	if err := unix.Fstat(fd, &held); err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	if err := unix.Stat(selfExe, &exe); err != nil {
		return fmt.Errorf("stat %s: %w", selfExe, err)
	}
	if held.Dev != exe.Dev || held.Ino != exe.Ino {
		return fmt.Errorf("inode %d:%d is not the running executable (%d:%d)", held.Dev, held.Ino, exe.Dev, exe.Ino)
	}
	return nil
}

// openReadOnly opens the sealed copy again, read-only, for a child to
// inherit. The caller closes it.
func (b *Binary) openReadOnly() (*os.File, error) {
	f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(b.fd()), os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("open the captured executable read-only: %w", err)
	}
	return f, nil
}

// memfdCreate makes an executable, sealable, close-on-exec memfd. Kernels
// since 6.3 take MFD_EXEC (needed where vm.memfd_noexec makes new memfds
// non-executable by default); older kernels reject the flag with EINVAL and
// create executable memfds anyway.
func memfdCreate() (int, error) {
	flags := unix.MFD_CLOEXEC | unix.MFD_ALLOW_SEALING
	fd, err := unix.MemfdCreate(memfdName, flags|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		fd, err = unix.MemfdCreate(memfdName, flags)
	}
	if errors.Is(err, unix.EACCES) {
		return -1, fmt.Errorf("create an executable memfd: %w (the sysctl vm.memfd_noexec forbids executable memfds)", err)
	}
	if err != nil {
		return -1, fmt.Errorf("create memfd: %w", err)
	}
	return fd, nil
}

// SHA256 is the lowercase hex SHA-256 of the captured bytes, computed at
// the first call (the mapping is sealed: the bytes hashed are the bytes
// that run).
func (b *Binary) SHA256() string {
	b.hashed.Do(func() { b.sum = sha256.Sum256(b.data) })
	return hex.EncodeToString(b.sum[:])
}

// copyInto copies r into the memfd f: by sendfile(2) in the kernel when r is
// a file, else through a buffer.
func copyInto(f *os.File, r io.Reader) error {
	src, ok := r.(*os.File)
	if !ok {
		_, err := io.Copy(f, r)
		return err
	}
	st, err := src.Stat()
	if err != nil {
		return err
	}
	for left := st.Size(); left > 0; {
		n, err := unix.Sendfile(int(f.Fd()), int(src.Fd()), nil, int(min(left, 1<<30)))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n == 0 {
			// Not for this pair of files: copy what is left through a buffer.
			if _, err := io.Copy(f, src); err != nil {
				return err
			}
			return nil
		}
		left -= int64(n)
	}
	// A file that grew since the stat keeps its tail.
	_, err = io.Copy(f, src)
	return err
}

// Size is the number of captured bytes.
func (b *Binary) Size() int64 { return int64(len(b.data)) }

// Bytes returns a copy of the captured bytes.
func (b *Binary) Bytes() []byte { return bytes.Clone(b.data) }

// Mapped returns the captured bytes as mapped, read-only (a write to them
// faults), without copying them; they are valid until Close.
func (b *Binary) Mapped() []byte { return b.data }

// ReadAt reads the captured bytes at off through the memfd (pread), not
// the mapping: a reader that compares them never touches pages of the
// mapping, each of which costs a fault the first time.
func (b *Binary) ReadAt(p []byte, off int64) (int, error) { return b.f.ReadAt(p, off) }

// Reader returns a new reader over the captured bytes, without copying them.
func (b *Binary) Reader() *bytes.Reader { return bytes.NewReader(b.data) }

// fd is the memfd's descriptor in this process, for starting a child.
func (b *Binary) fd() int { return int(b.f.Fd()) }

// Close unmaps and closes the captured copy. The Binary must not be used
// afterwards; children already started keep running.
func (b *Binary) Close() error {
	var err error
	b.closed.Do(func() {
		err = errors.Join(unix.Munmap(b.data), b.f.Close())
		b.data = nil
	})
	return err
}
