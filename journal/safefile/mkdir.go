package safefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// MkdirAll creates the directory dir and every missing parent, like
// os.MkdirAll, each new one with exactly perm (the umask does not apply),
// and makes the whole path durable: every directory from dir up to "/" is
// fsynced, so each new directory and its name in its parent are on disk
// when MkdirAll returns. A directory found in place is fsynced with its
// parent as well, because an interrupted earlier run may have created it
// without syncing its parent (see Durable). dir must be absolute; existing
// components are followed as os.MkdirAll follows them, so dir is a path of
// root's the caller trusts (a journal directory, /etc/oac-node), never one
// the service account can write. An existing component that is not a
// directory is an error matching unix.ENOTDIR.
func MkdirAll(dir string, perm os.FileMode) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("create directory %s: not an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	var missing []string
	for p := dir; ; p = filepath.Dir(p) {
		var st unix.Stat_t
		err := unix.Stat(p, &st)
		if err == nil {
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				return fmt.Errorf("create directory %s: %w", dir, &os.PathError{Op: "mkdir", Path: p, Err: unix.ENOTDIR})
			}
			break
		}
		if !errors.Is(err, unix.ENOENT) || p == "/" {
			return fmt.Errorf("create directory %s: %w", dir, &os.PathError{Op: "stat", Path: p, Err: err})
		}
		missing = append(missing, p)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := mkdirPerm(missing[i], perm); err != nil {
			return fmt.Errorf("create directory %s: %w", dir, err)
		}
	}
	for p := dir; ; p = filepath.Dir(p) {
		if err := SyncDir(p); err != nil {
			return fmt.Errorf("create directory %s: %w", dir, err)
		}
		if p == "/" {
			return nil
		}
	}
}

// mkdirPerm creates the directory p with exactly perm; one another process
// created meanwhile is accepted.
func mkdirPerm(p string, perm os.FileMode) error {
	err := unix.Mkdir(p, 0o700)
	if errors.Is(err, unix.EEXIST) {
		var st unix.Stat_t
		if serr := unix.Stat(p, &st); serr == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return nil
		}
	}
	if err != nil {
		return &os.PathError{Op: "mkdir", Path: p, Err: err}
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.Fchmod(fd, unixMode(perm)); err != nil {
		return &os.PathError{Op: "chmod", Path: p, Err: err}
	}
	return nil
}

// Remove is Root.Remove for a path (see openParent): the file p is
// unlinked (a link itself, never its target) and its directory fsynced,
// also when p is already gone, which reports os.ErrNotExist.
func Remove(p string) error {
	r, base, err := openParent(p)
	if err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	defer r.Close()
	return r.Remove(base)
}

// RemoveWritten removes p, a file published by AtomicWrite, together with
// the temporary file an AtomicWrite of p interrupted before its rename
// leaves behind, and fsyncs their directory. Names already gone are no
// error: an earlier run may have removed them.
func RemoveWritten(p string) error {
	r, base, err := openParent(p)
	if err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	defer r.Close()
	for _, name := range []string{tempName("", base), base} {
		if err := r.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Mkdir is Root.Mkdir for a path (see openParent): the directory p is
// created with exactly perm, and it and its parent are fsynced, so that
// its name is on disk when Mkdir returns. An existing entry reports an
// error matching os.ErrExist and is left as it is.
func Mkdir(p string, perm os.FileMode) error {
	r, base, err := openParent(p)
	if err != nil {
		return fmt.Errorf("create directory %s: %w", p, err)
	}
	defer r.Close()
	return r.Mkdir(base, perm)
}
