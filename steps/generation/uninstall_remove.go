package generation

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// RemoveTree removes path and everything under it without ever following
// a symbolic link: each directory is opened with O_NOFOLLOW relative to
// its parent's descriptor, and a link is unlinked, not entered. A missing
// path is no error. Then it fsyncs path's parent.
func RemoveTree(path string) error {
	parent, base := filepath.Split(filepath.Clean(path))
	dfd, err := unix.Open(parent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("remove %s: open %s: %w", path, parent, err)
	}
	defer unix.Close(dfd)
	if err := removeAt(dfd, base, path); err != nil {
		return err
	}
	if err := safefile.SyncDir(parent); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// removeAt removes name in the directory dfd (full is its path, for
// errors).
func removeAt(dfd int, name, full string) error {
	err := unix.Unlinkat(dfd, name, 0)
	switch {
	case err == nil, errors.Is(err, unix.ENOENT):
		return nil
	case !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM):
		return &os.PathError{Op: "remove", Path: full, Err: err}
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: full, Err: err}
	}
	dir := os.NewFile(uintptr(fd), full)
	for {
		names, rerr := dir.Readdirnames(256)
		for _, n := range names {
			if err := removeAt(fd, n, filepath.Join(full, n)); err != nil {
				dir.Close()
				return err
			}
		}
		if rerr == io.EOF || len(names) == 0 {
			break
		}
		if rerr != nil {
			dir.Close()
			return &os.PathError{Op: "read directory", Path: full, Err: rerr}
		}
		// Entries were removed under the open descriptor: read again
		// from the start.
		if _, err := dir.Seek(0, io.SeekStart); err != nil {
			dir.Close()
			return &os.PathError{Op: "read directory", Path: full, Err: err}
		}
	}
	dir.Close()
	if err := unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: full, Err: err}
	}
	return nil
}

// removeEmptyDir removes the directory path when it is empty (a link or a
// missing path is left alone).
func removeEmptyDir(path string) error {
	err := unix.Rmdir(path)
	switch {
	case err == nil, errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOTDIR):
		return nil
	}
	return &os.PathError{Op: "remove", Path: path, Err: err}
}
