package lease

import (
	"errors"
	"fmt"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// The refusals of a file that is not a private regular file of the node
// are the safe-file layer's (*safefile.UnsafeError); these are its
// sentinels, under the names this package has always used.
var (
	// ErrUnsafe is matched by every such refusal.
	ErrUnsafe = safefile.ErrUnsafe
	// ErrSymlink: the path (or a component below the generations
	// directory) is a symbolic link.
	ErrSymlink = safefile.ErrSymlink
	// ErrHardLinked: the file has more than one link, so another name can
	// change it.
	ErrHardLinked = safefile.ErrHardLinked
	// ErrForeignOwner: the file or directory is not owned by the node
	// account.
	ErrForeignOwner = safefile.ErrForeignOwner
	// ErrUnsafeMode: a file's mode is not exactly 0600, or the directory is
	// writable by group or others.
	ErrUnsafeMode = safefile.ErrUnsafeMode
	// ErrNotRegular: a file is a FIFO, device, socket or directory.
	ErrNotRegular = safefile.ErrNotRegular
	// ErrTooLarge: a record is larger than its kind allows (4096 bytes;
	// 16384 for .preparing).
	ErrTooLarge = safefile.ErrTooLarge
)

// ErrMalformed: a record is not a JSON object with exactly its key set and
// value types (unknown, missing or duplicate keys, wrong types).
var ErrMalformed = errors.New("is not a valid record")

// ErrLeaseExists: Initialize found a lease already present. The existing
// file is left untouched; Open tells whether it is usable.
var ErrLeaseExists = errors.New("lease already exists")

// ErrLeaseMissing: there is no lease for the generation, or an identity
// record exists without its lease (the lease was removed; it is never
// re-created).
var ErrLeaseMissing = errors.New("lease is missing")

// ErrIdentityMissing: the lease exists but its identity record does not: an
// interrupted initialization. It is never adopted and never re-created.
var ErrIdentityMissing = errors.New("lease identity is missing (interrupted initialization)")

// ErrIdentityMismatch: the identity record names another installation,
// generation or specification digest than the caller expects.
var ErrIdentityMismatch = errors.New("lease identity does not match")

// ErrInodeReplaced: the lease path names another inode than the identity
// record (or than the file opened), or a path changed while it was read.
var ErrInodeReplaced = errors.New("lease inode was replaced")

// ErrHelperActive: the exclusive lease lock is busy because a native helper
// (or another collector or repair) holds the lease.
var ErrHelperActive = errors.New("Generation helper is still active")

// ErrGenerationBusy: a record that forbids starting a helper exists
// (.preparing, .collecting or .dropped), or the final configuration is not
// published.
var ErrGenerationBusy = errors.New("generation is not ready for a helper")

// ErrDropped: the generation has a dropped marker and can never be prepared
// or used again.
var ErrDropped = errors.New("generation was dropped")

// CheckError is a refusal of one path by one check of this package (the
// lease, its identity and its records). Err is one of the sentinels above.
type CheckError struct {
	Path   string // the file or directory refused
	Check  string // the check that refused it, e.g. "identity", "lock", "records"
	Detail string // what was found, without file contents
	Err    error  // sentinel
}

func (e *CheckError) Error() string {
	s := fmt.Sprintf("%s %s (check %s)", e.Path, e.Err, e.Check)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the sentinel.
func (e *CheckError) Unwrap() error { return e.Err }

func refuse(path, check string, sentinel error, format string, args ...any) *CheckError {
	return &CheckError{Path: path, Check: check, Detail: fmt.Sprintf(format, args...), Err: sentinel}
}
