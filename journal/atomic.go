package journal

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrConflict is returned (wrapped in *ConflictError) when a write-once file
// already exists with different bytes. Nothing is overwritten.
var ErrConflict = errors.New("write-once file exists with different contents")

// ConflictError names the write-once file that holds other bytes.
type ConflictError struct{ Path string }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s already exists with different contents; it is never overwritten", e.Path)
}

// Unwrap lets callers test with errors.Is(err, ErrConflict).
func (e *ConflictError) Unwrap() error { return ErrConflict }

// SyncDir fsyncs a directory, making the entries created, renamed or removed
// in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// tempName is the one temporary file name used for publishing path. It is
// fixed so that a run interrupted between creating it and renaming it leaves
// at most one file behind, which the next write of the same path removes.
// Callers serialize writes of one path (they hold the instance's lock).
func tempName(dir, base string) string { return filepath.Join(dir, "."+base+".tmp") }

// writeTemp writes data to the private temporary file tmp (removing one an
// interrupted run left), sets perm, and fsyncs and closes it. On error no
// temporary file is left.
func writeTemp(tmp string, data []byte, perm os.FileMode) error {
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	err = func() error {
		if _, err := f.Write(data); err != nil {
			return err
		}
		if err := f.Chmod(perm); err != nil {
			return err
		}
		failpoint("atomic-before-sync")
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// AtomicWrite replaces path with data: a temporary file in the same directory
// (.<name>.tmp, replacing one an interrupted run left) is written, given perm, fsynced and closed, renamed over path, and the
// directory fsynced. Readers see the old or the new contents, never a mix;
// after return the new contents are durable. The temporary file is removed
// on any failure before the rename.
func AtomicWrite(path string, data []byte, perm os.FileMode) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp := tempName(dir, base)
	if err := writeTemp(tmp, data, perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	failpoint("atomic-after-rename")
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// PublishOnce publishes data at path exactly once. A new file is written and
// made durable like AtomicWrite but linked into place without replacing
// anything (renameat2 RENAME_NOREPLACE, or link(2) where the file system
// lacks it). If path already exists with the same bytes, PublishOnce
// succeeds and changes nothing; with different bytes it returns a
// *ConflictError. The existing file is read without following links.
func PublishOnce(path string, data []byte, perm os.FileMode) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if same, err := sameContents(path, data); err == nil {
		if !same {
			return &ConflictError{Path: path}
		}
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("publish %s: %w", path, err)
	}
	tmp := tempName(dir, base)
	if err := writeTemp(tmp, data, perm); err != nil {
		return fmt.Errorf("publish %s: %w", path, err)
	}
	defer os.Remove(tmp) // gone after a rename; the link's source otherwise
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		err = os.Link(tmp, path)
	}
	if errors.Is(err, os.ErrExist) || errors.Is(err, unix.EEXIST) {
		// Someone published first: equal bytes are success, others a conflict.
		same, rerr := sameContents(path, data)
		if rerr != nil {
			return fmt.Errorf("publish %s: %w", path, rerr)
		}
		if !same {
			return &ConflictError{Path: path}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("publish %s: %w", path, err)
	}
	failpoint("publish-after-link")
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("publish %s: %w", path, err)
	}
	return nil
}

// sameContents reports whether the regular file at path holds exactly data.
func sameContents(path string, data []byte) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return false, fmt.Errorf("%s is a symbolic link", path)
		}
		return false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !st.Mode().IsRegular() {
		return false, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() != int64(len(data)) {
		return false, nil
	}
	got, err := io.ReadAll(io.LimitReader(f, int64(len(data))+1))
	if err != nil {
		return false, err
	}
	return bytes.Equal(got, data), nil
}
