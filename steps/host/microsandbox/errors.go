package microsandbox

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInventoryIncomplete: an image or sandbox inventory could not be taken
// completely (the query failed, timed out, printed too much or printed
// something that is not an inventory). Absence is not proven; keep the
// bytes.
var ErrInventoryIncomplete = errors.New("microsandbox inventory is incomplete")

// ErrCommandFailed: an msb command did not succeed (start failure, timeout,
// non-zero exit or output past its bound).
var ErrCommandFailed = errors.New("msb command failed")

// ErrMalformedOutput: msb printed something its parser does not accept.
var ErrMalformedOutput = errors.New("msb printed malformed output")

// ErrImageMismatch: the image msb reports is not the expected digest or not
// linux/amd64.
var ErrImageMismatch = errors.New("microsandbox image does not match")

// ErrRemoveRefused: msb refused to remove an image (for example because a
// sandbox uses it), or the image is still listed after removal. The bytes
// stay.
var ErrRemoveRefused = errors.New("microsandbox image removal refused")

// ErrStoreNotOwned: the store holds no ownership marker for this
// installation (a non-empty store without a marker, or a marker naming
// another installation). Its bytes are never touched.
var ErrStoreNotOwned = errors.New("microsandbox store is not owned by this installation")

// ErrInvalidReference: an image reference is not name@sha256:<64 hex>.
var ErrInvalidReference = errors.New("invalid microsandbox image reference")

// CommandError describes a failed msb invocation. Stderr holds at most a
// short, printable excerpt of what msb wrote to its standard error.
type CommandError struct {
	Args     []string // msb arguments (paths and references only; no secrets pass through msb)
	ExitCode int      // -1 when the process did not exit normally
	Stderr   string
	Err      error // the underlying cause (exit status, timeout, overflow)
}

func (e *CommandError) Error() string {
	s := fmt.Sprintf("msb %s: %v", strings.Join(e.Args, " "), e.Err)
	if e.Stderr != "" {
		s += ": " + e.Stderr
	}
	return s
}

// Unwrap returns ErrCommandFailed and the cause.
func (e *CommandError) Unwrap() []error { return []error{ErrCommandFailed, e.Err} }

// InventoryError is an incomplete inventory: what was asked and why it is
// not complete.
type InventoryError struct {
	Query string // "image list" or "sandbox list"
	Err   error
}

func (e *InventoryError) Error() string {
	return fmt.Sprintf("%s (msb %s): %v; nothing is removed", ErrInventoryIncomplete, e.Query, e.Err)
}

// Unwrap returns ErrInventoryIncomplete and the cause.
func (e *InventoryError) Unwrap() []error { return []error{ErrInventoryIncomplete, e.Err} }
