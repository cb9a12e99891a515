package download

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// SpaceError reports a file system with less free space than needed.
type SpaceError struct {
	Dir       string
	Need      int64 // bytes
	Available int64 // bytes available to an unprivileged user
}

func (e *SpaceError) Error() string {
	return fmt.Sprintf("not enough free space in %s: %d MiB needed, %d MiB available; free some space and rerun the same command",
		e.Dir, (e.Need+(1<<20)-1)>>20, e.Available>>20)
}

// Unwrap lets callers test with errors.Is(err, ErrNoSpace).
func (e *SpaceError) Unwrap() error { return ErrNoSpace }

// CheckSpace returns a *SpaceError when the file system holding dir has
// less than need bytes available to an unprivileged user (statfs f_bavail;
// the root reserve does not count). The caller computes need: the missing
// bytes of every download (Missing), plus the unpacked Runtime archive and
// what its import takes. The check cannot reserve the space.
func CheckSpace(dir string, need int64) error {
	avail, err := Available(dir)
	if err != nil {
		return err
	}
	if avail < need {
		return &SpaceError{Dir: dir, Need: need, Available: avail}
	}
	return nil
}

// Available is the number of bytes an unprivileged user may still write
// on the file system holding dir.
func Available(dir string) (int64, error) {
	var s unix.Statfs_t
	if err := unix.Statfs(dir, &s); err != nil {
		return 0, fmt.Errorf("check free space in %s: %w", dir, err)
	}
	unit := s.Frsize
	if unit <= 0 {
		unit = s.Bsize
	}
	return int64(s.Bavail) * unit, nil
}

// Missing is the number of bytes a download of size bytes to target still
// has to receive: 0 when the target exists (Download verifies it), the
// rest beyond a kept part file otherwise.
func Missing(target string, size int64) (int64, error) {
	if _, err := os.Lstat(target); err == nil {
		return 0, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("check %s: %w", target, err)
	}
	fi, err := os.Lstat(PartPath(target))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return size, nil
	case err != nil:
		return 0, fmt.Errorf("check %s: %w", PartPath(target), err)
	case !fi.Mode().IsRegular() || fi.Size() > size:
		return size, nil
	}
	return size - fi.Size(), nil
}
