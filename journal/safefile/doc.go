// Package safefile is the installer's one way to do each durable thing with
// a file: open it safely, write it atomically, publish it once, commit a
// file written in pieces, and lock.
//
// Every operation resolves names beneath an open directory (a Root) without
// following a symbolic link and without leaving the directory: openat2(2)
// with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS, or on
// kernels (and seccomp filters) without openat2 a walk that opens one
// component at a time with O_NOFOLLOW. An opened file is checked (regular,
// one link, owner, exact mode, size) and its name re-checked to still name
// the opened inode; O_NONBLOCK keeps a FIFO from blocking the opener.
//
//	Root.ReadFile / OpenFile / OpenDir   open beneath the root with every check   (root.go)
//	Root.AtomicWrite, AtomicWrite        temp in the same directory, write, chmod,
//	                                     fsync, close, rename, fsync directory      (atomic.go)
//	Root.PublishOnce / CreateOnce        write-once: RENAME_NOREPLACE or link(2);
//	                                     equal bytes are success, others conflict  (publish.go)
//	Root.OpenPending, Pending.Commit     a file streamed under a private name, then
//	                                     fsync + rename + directory fsync           (pending.go)
//	Root.Durable                         make an existing file and its name durable (sync.go)
//	MkdirAll, Root.Mkdir, Mkdir          create directories, each fsynced with its parent;
//	                                     MkdirAll also syncs the components it finds (mkdir.go)
//	Root.Remove, Remove                  unlink, then fsync the directory, also when gone
//	Lock, TryLock, Root.TryLock          flock(2) on a file whose inode never changes (lock.go)
//	Failpoint                            crash points, compiled only with -tags crashtest
//
// # Durability
//
// A successful write, publication or commit has fsynced the file and its
// directory before it returns. So has every "already there" success: a
// write-once file found holding the same bytes is fsynced with its
// directory before PublishOnce reports success, because a crash between an
// earlier rename and its directory fsync may have left the name in the page
// cache only. Callers that skip work because a file is present call
// Root.Durable for the same reason.
//
// # Errors
//
// One vocabulary: a file that is not what it must be is a *UnsafeError
// matching ErrUnsafe and one of ErrSymlink, ErrNotRegular, ErrHardLinked,
// ErrForeignOwner, ErrUnsafeMode, ErrTooLarge, ErrEscapes or ErrReplaced; a
// write-once file holding other bytes is a *ConflictError matching
// ErrConflict; a busy lock is ErrLocked and a lock file replaced under its
// holder ErrLockReplaced. A missing file is not unsafe: it matches
// os.ErrNotExist, and an existing one where none may be os.ErrExist.
//
// # Failpoints
//
// Built with -tags crashtest, every Failpoint (and the layer's own points:
// atomic-before-sync, atomic-after-rename, publish-after-link,
// pending-before-rename) counts towards OAC_CRASH_AT=N, at which the
// process SIGKILLs itself, and is appended to the file OAC_CRASH_COUNT
// names; the crash harness in workflow/crashharness relies on both. The
// same build records every fsync the layer makes (SyncCount), so tests can
// see durability that a SIGKILL cannot. With OAC_PAUSE_AT=N the process
// instead pauses at the N-th point, Failpoints and Pausepoints (the points
// between a command's decisions that write nothing) counted together, until
// the interleaving test releases it. The shipped binary has none of this.
package safefile
