package journal

import "github.com/openagentcore/oac-node-install/journal/safefile"

// The safe-file layer moved to package safefile. These names stay only
// while callers move to it; they are the same types and values, not
// copies.

type (
	Root          = safefile.Root
	Expect        = safefile.Expect
	UnsafeError   = safefile.UnsafeError
	ConflictError = safefile.ConflictError
	FileLock      = safefile.FileLock
	LockOptions   = safefile.LockOptions
	LockCreate    = safefile.LockCreate
)

const (
	AnyUID          = safefile.AnyUID
	CreateIfMissing = safefile.CreateIfMissing
	MustExist       = safefile.MustExist
	CreateExclusive = safefile.CreateExclusive
)

var (
	ErrUnsafe       = safefile.ErrUnsafe
	ErrConflict     = safefile.ErrConflict
	ErrLocked       = safefile.ErrLocked
	ErrLockReplaced = safefile.ErrLockReplaced
)

var (
	OpenRoot      = safefile.OpenRoot
	AtomicWrite   = safefile.AtomicWrite
	PublishOnce   = safefile.PublishOnce
	SyncDir       = safefile.SyncDir
	Lock          = safefile.Lock
	LockContext   = safefile.LockContext
	TryLock       = safefile.TryLock
	TryLockShared = safefile.TryLockShared
	Failpoint     = safefile.Failpoint
)
