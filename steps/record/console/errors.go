package console

import (
	"errors"
	"fmt"
)

// ErrConflict is returned (wrapped in *ConflictError) when a release is
// already published with other bytes, holds a file it does not declare, or
// an artifact offered for publication does not have its declared size and
// sha256. Nothing was added.
var ErrConflict = errors.New("release conflicts with its published files")

// ErrInvalidRelease is returned when the files offered to Publish are not a
// consistent release: metadata that does not verify, a fixed file missing
// from or differing from SHA256SUMS, an undeclared artifact.
var ErrInvalidRelease = errors.New("invalid release files")

// ErrNotPublished is returned by Activate and Switch for a release whose
// metadata is not published (or does not verify).
var ErrNotPublished = errors.New("release is not published")

// ErrActiveRelease is returned by Activate when active.json already names
// another release. Switch moves the pointer explicitly.
var ErrActiveRelease = errors.New("another release is active")

// ConflictError names the release file that conflicts and why.
type ConflictError struct {
	Path   string
	Reason string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s: %s; nothing was added", e.Path, e.Reason)
}

// Unwrap lets callers test with errors.Is(err, ErrConflict).
func (e *ConflictError) Unwrap() error { return ErrConflict }
