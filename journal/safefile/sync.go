package safefile

import (
	"fmt"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// fsync makes the file or directory fd durable; name is its full path, for
// the record the crashtest build keeps (SyncCount).
func fsync(fd int, name string) error {
	for {
		err := unix.Fsync(fd)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		noteSync(name)
		return nil
	}
}

// Sync fsyncs the open file f (named by f.Name() in the crashtest record).
func Sync(f *os.File) error {
	if err := f.Sync(); err != nil {
		return err
	}
	noteSync(f.Name())
	return nil
}

// Fdatasync makes f's data durable (fdatasync(2)): its bytes and the
// metadata needed to read them back, such as its size.
func Fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		noteSync(f.Name())
		return nil
	}
}

// SyncDir fsyncs a directory, making the entries created, renamed or removed
// in it durable.
func SyncDir(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, &os.PathError{Op: "open", Path: dir, Err: err})
	}
	defer unix.Close(fd)
	if err := fsync(fd, dir); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// Durable makes the existing regular file rel and its name durable: it is
// opened with the checks of OpenFile (exp), fsynced, and its directory
// fsynced. Every success that finds a file already in place ("already
// there", skip-if-present) calls it first: a crash between an earlier
// rename and its directory fsync may have left the file or its name in the
// page cache only, and a power loss would take back what the caller is
// about to record as done. A missing file reports os.ErrNotExist.
func (r *Root) Durable(rel string, exp Expect) error {
	f, err := r.OpenFile(rel, exp)
	if err != nil {
		return err
	}
	defer f.Close()
	return r.syncOpened(rel, f)
}

// syncOpened fsyncs f, which rel names, and the directory holding rel.
func (r *Root) syncOpened(rel string, f *os.File) error {
	if err := fsync(int(f.Fd()), f.Name()); err != nil {
		return fmt.Errorf("sync %s: %w", f.Name(), err)
	}
	dirfd, _, err := r.parent(rel)
	if err != nil {
		return fmt.Errorf("sync %s: %w", f.Name(), err)
	}
	defer unix.Close(dirfd)
	if err := fsync(dirfd, path.Dir(f.Name())); err != nil {
		return fmt.Errorf("sync %s: sync directory: %w", f.Name(), err)
	}
	return nil
}

// DurablePath is Root.Durable for a path (see openParent).
func DurablePath(p string, exp Expect) error {
	r, base, err := openParent(p)
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Durable(base, exp)
}

// openParent opens the directory holding p as a Root for the path-based
// helpers (see OpenRootTrusted); only p's last component is resolved
// without following links.
func openParent(p string) (*Root, string, error) {
	r, err := OpenRootTrusted(path.Dir(p))
	if err != nil {
		return nil, "", err
	}
	return r, path.Base(p), nil
}

// OpenRootTrusted is OpenRoot for a directory the caller trusts entirely:
// dir itself may be reached through a symbolic link (a test's temporary
// node root, a data directory given on the command line). Everything
// beneath it is resolved as under any Root.
func OpenRootTrusted(dir string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, openError("open", dir, err)
	}
	return &Root{fd: fd, path: dir}, nil
}

// Sync fsyncs the root directory itself, making the entries created,
// renamed or removed in it durable; a caller that finds a name already gone
// calls it before relying on the removal.
func (r *Root) Sync() error {
	fd, err := unix.Openat(r.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return openError("sync directory", r.path, err)
	}
	defer unix.Close(fd)
	if err := fsync(fd, r.path); err != nil {
		return fmt.Errorf("sync directory %s: %w", r.path, err)
	}
	return nil
}
