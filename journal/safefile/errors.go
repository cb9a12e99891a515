package safefile

import (
	"errors"
	"fmt"
)

// ErrUnsafe is matched by every refusal of a path that is not what it must
// be (a *UnsafeError); the specific sentinels below say why.
var ErrUnsafe = errors.New("unsafe path")

// Why a path was refused; each *UnsafeError matches ErrUnsafe and one of
// these.
var (
	// ErrSymlink: the path, or a component of it, is a symbolic link.
	ErrSymlink = errors.New("is a symbolic link")
	// ErrNotRegular: a FIFO, device, socket or directory where a regular
	// file is required, or a non-directory where a directory is.
	ErrNotRegular = errors.New("is not a regular file")
	// ErrHardLinked: a file with more than one link, so another name can
	// change it.
	ErrHardLinked = errors.New("has more than one link")
	// ErrForeignOwner: owned by another account than required.
	ErrForeignOwner = errors.New("is owned by another account")
	// ErrUnsafeMode: other permission bits than required.
	ErrUnsafeMode = errors.New("has an unsafe mode")
	// ErrTooLarge: larger than the size limit, or grew past it while read.
	ErrTooLarge = errors.New("is larger than allowed")
	// ErrEscapes: an absolute path or a ".." component, which would leave
	// the root.
	ErrEscapes = errors.New("leaves its root directory")
	// ErrReplaced: the name was removed or replaced while it was opened.
	ErrReplaced = errors.New("was replaced while it was opened")
)

// UnsafeError names the refused path, the reason (one of the sentinels
// above) and what was found.
type UnsafeError struct {
	Path   string
	Err    error
	Detail string
}

func (e *UnsafeError) Error() string {
	s := fmt.Sprintf("refusing %s: %s", e.Path, e.Err)
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// Unwrap lets callers test with errors.Is(err, ErrUnsafe) and with the
// specific sentinel.
func (e *UnsafeError) Unwrap() []error { return []error{ErrUnsafe, e.Err} }

// Check is a short name of the check that refused the path ("symlink",
// "type", "links", "owner", "mode", "size", "path", "inode").
func (e *UnsafeError) Check() string {
	switch e.Err {
	case ErrSymlink:
		return "symlink"
	case ErrNotRegular:
		return "type"
	case ErrHardLinked:
		return "links"
	case ErrForeignOwner:
		return "owner"
	case ErrUnsafeMode:
		return "mode"
	case ErrTooLarge:
		return "size"
	case ErrEscapes:
		return "path"
	}
	return "inode"
}

func unsafe(path string, why error, format string, args ...any) *UnsafeError {
	return &UnsafeError{Path: path, Err: why, Detail: fmt.Sprintf(format, args...)}
}

// ErrConflict is matched (through *ConflictError) when a write-once file
// already exists with different contents. Nothing is overwritten.
var ErrConflict = errors.New("write-once file exists with different contents")

// ConflictError names the write-once file that holds other bytes.
type ConflictError struct{ Path string }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s already exists with different contents; it is never overwritten", e.Path)
}

// Unwrap lets callers test with errors.Is(err, ErrConflict).
func (e *ConflictError) Unwrap() error { return ErrConflict }

// ErrLocked is returned when a non-blocking lock is held by another open
// file (another process, or another FileLock in this one), or when a
// waiting lock's context ends first.
var ErrLocked = errors.New("lock is held by another process")

// ErrLockReplaced is returned when, after the lock was taken (or when a
// holder re-checks it), its path no longer names the locked file: someone
// removed or replaced the lock file, so the lock excludes nobody. Lock
// files are never removed or replaced by this program.
var ErrLockReplaced = errors.New("lock file was removed or replaced")
