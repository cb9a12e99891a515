package safefile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// FileLock is a held flock(2) lock on a lock file whose inode never
// changes. The lock lasts until Unlock, or until the file and every
// descriptor duplicated from it (for example one passed to a child) are
// closed.
type FileLock struct {
	f        *os.File
	path     string
	dev, ino uint64
	id       func() (dev, ino uint64, err error)
}

// File returns the locked file, for example to let a child inherit the
// lock. It stays owned by the FileLock.
func (l *FileLock) File() *os.File { return l.f }

// Path returns the lock file's name.
func (l *FileLock) Path() string { return l.path }

// FileID returns the device and inode number of the locked file.
func (l *FileLock) FileID() (dev, ino uint64) { return l.dev, l.ino }

// Verify checks that the lock file's name still names the locked inode;
// otherwise (removed or replaced) it returns ErrLockReplaced: another
// process may hold a lock on the new file, and the holder must stop before
// writing anything more.
func (l *FileLock) Verify() error {
	if l == nil || l.f == nil {
		return fmt.Errorf("lock %s: %w", l.path, ErrLockReplaced)
	}
	dev, ino, err := l.id()
	if err != nil || dev != l.dev || ino != l.ino {
		return fmt.Errorf("lock %s: %w", l.path, ErrLockReplaced)
	}
	return nil
}

// Unlock releases the lock and closes the file. It is safe to call twice.
//
// The lock is released with LOCK_UN before the close: a process forked by
// another goroutine holds a copy of every descriptor until it executes its
// program, and closing ours alone would leave the lock held through that
// copy for as long.
func (l *FileLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("unlock %s: %w", l.path, err)
	}
	return nil
}

// LockCreate says whether acquiring a lock may create its file.
type LockCreate int

const (
	// CreateIfMissing creates the lock file when it does not exist (never
	// truncating one that does).
	CreateIfMissing LockCreate = iota
	// MustExist refuses a missing lock file with os.ErrNotExist.
	MustExist
	// CreateExclusive creates the lock file and refuses an existing one
	// with os.ErrExist. The new file and its directory are fsynced before
	// the lock is returned (a generation lease's initialization).
	CreateExclusive
)

// LockOptions describe a lock taken through a Root.
type LockOptions struct {
	// Shared takes LOCK_SH instead of LOCK_EX.
	Shared bool
	// Create says whether the lock file may or must be created.
	Create LockCreate
	// Perm is the exact mode of a created lock file (umask does not
	// apply); 0 means 0600.
	Perm os.FileMode
	// Expect is checked on the lock file before locking (a regular file
	// with one link always). Its zero value expects the owner root.
	Expect Expect
}

// Lock takes an exclusive lock on path, waiting as long as it takes. The
// lock file is created with mode perm if missing, never truncated, and a
// symbolic link at path is refused. See LockContext.
func Lock(path string, perm os.FileMode) (*FileLock, error) {
	return acquire(context.Background(), pathTarget(path), LockOptions{Perm: perm, Expect: Expect{UID: AnyUID}}, true)
}

// LockContext is Lock giving up when ctx ends, with an error that matches
// both ErrLocked and ctx.Err().
func LockContext(ctx context.Context, path string, perm os.FileMode) (*FileLock, error) {
	return acquire(ctx, pathTarget(path), LockOptions{Perm: perm, Expect: Expect{UID: AnyUID}}, true)
}

// TryLock takes an exclusive lock on path without waiting: a lock held
// elsewhere returns ErrLocked. The file is created like Lock's. After the
// lock is taken, path must still name the locked file (else
// ErrLockReplaced).
func TryLock(path string, perm os.FileMode) (*FileLock, error) {
	return acquire(context.Background(), pathTarget(path), LockOptions{Perm: perm, Expect: Expect{UID: AnyUID}}, false)
}

// TryLockShared is TryLock taking a shared lock: other shared locks may be
// held, an exclusive one returns ErrLocked.
func TryLockShared(path string, perm os.FileMode) (*FileLock, error) {
	return acquire(context.Background(), pathTarget(path), LockOptions{Shared: true, Perm: perm, Expect: Expect{UID: AnyUID}}, false)
}

// TryLock takes a lock on rel under the root without waiting, resolving
// rel like OpenFile and checking the lock file against opt.Expect. A lock
// held elsewhere returns ErrLocked.
func (r *Root) TryLock(rel string, opt LockOptions) (*FileLock, error) {
	return acquire(context.Background(), r.lockTarget(rel), opt, false)
}

// LockContext is Root.TryLock waiting until the lock is free or ctx ends.
func (r *Root) LockContext(ctx context.Context, rel string, opt LockOptions) (*FileLock, error) {
	return acquire(ctx, r.lockTarget(rel), opt, true)
}

// lockTarget abstracts how a lock file is named: a plain path, or a path
// resolved beneath a Root.
type lockTarget struct {
	full    string
	open    func(flags int, mode uint32) (int, error)
	syncDir func() error
	id      func() (dev, ino uint64, err error)
}

func pathTarget(path string) lockTarget {
	return lockTarget{
		full: path,
		open: func(flags int, mode uint32) (int, error) {
			return unix.Open(path, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
		},
		syncDir: func() error { return SyncDir(filepath.Dir(path)) },
		id: func() (uint64, uint64, error) {
			var st unix.Stat_t
			if err := unix.Lstat(path, &st); err != nil {
				return 0, 0, err
			}
			return st.Dev, st.Ino, nil
		},
	}
}

func (r *Root) lockTarget(rel string) lockTarget {
	return lockTarget{
		full: r.Join(rel),
		open: func(flags int, mode uint32) (int, error) {
			return openBeneath(r.fd, rel, flags, mode)
		},
		syncDir: func() error {
			dirfd, _, err := r.parent(rel)
			if err != nil {
				return err
			}
			defer unix.Close(dirfd)
			return fsync(dirfd, path.Dir(r.Join(rel)))
		},
		id: func() (uint64, uint64, error) { return r.FileID(rel) },
	}
}

// afterFlock runs between taking the lock and checking its name; tests use
// it to replace the lock file in that window.
var afterFlock func()

// acquire opens (or creates) the lock file, checks it, locks it (waiting
// while ctx lasts if wait is set) and checks that its name still names it.
func acquire(ctx context.Context, t lockTarget, opt LockOptions, wait bool) (*FileLock, error) {
	fd, err := openLockFile(t, opt)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*FileLock, error) {
		unix.Close(fd)
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail(fmt.Errorf("lock %s: %w", t.full, err))
	}
	exp := opt.Expect
	exp.MaxSize = 0
	if err := checkStat(t.full, &st, unix.S_IFREG, exp); err != nil {
		return fail(err)
	}
	if err := flock(ctx, fd, opt.Shared, wait); err != nil {
		return fail(fmt.Errorf("lock %s: %w", t.full, err))
	}
	if afterFlock != nil {
		afterFlock()
	}
	dev, ino, err := t.id()
	if err != nil || dev != st.Dev || ino != st.Ino {
		return fail(fmt.Errorf("lock %s: %w", t.full, ErrLockReplaced))
	}
	return &FileLock{f: os.NewFile(uintptr(fd), t.full), path: t.full, dev: st.Dev, ino: st.Ino, id: t.id}, nil
}

// openLockFile opens the lock file read-only (a FIFO does not block),
// creating it as opt says. A file it created gets the exact mode and is
// fsynced with its directory.
func openLockFile(t lockTarget, opt LockOptions) (int, error) {
	const flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY
	perm := opt.Perm
	if perm == 0 {
		perm = 0o600
	}
	var fd int
	var err error
	created := false
	switch opt.Create {
	case MustExist:
		fd, err = t.open(flags, 0)
	case CreateExclusive:
		fd, err = t.open(flags|unix.O_CREAT|unix.O_EXCL, 0o600)
		created = err == nil
	default:
		// Create exclusively first, to know whether the mode is ours to set;
		// a file removed between the two opens is retried.
		for range 10 {
			fd, err = t.open(flags|unix.O_CREAT|unix.O_EXCL, 0o600)
			if err == nil {
				created = true
				break
			}
			if !errors.Is(err, unix.EEXIST) {
				break
			}
			fd, err = t.open(flags, 0)
			if !errors.Is(err, unix.ENOENT) {
				break
			}
		}
	}
	if err != nil {
		return -1, openError("lock", t.full, err)
	}
	if created {
		err := unix.Fchmod(fd, unixMode(perm))
		if err == nil {
			err = fsync(fd, t.full)
		}
		if err == nil {
			err = t.syncDir()
		}
		if err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("create lock file %s: %w", t.full, err)
		}
	}
	return fd, nil
}

// flock takes the lock; waiting, it blocks in the kernel when ctx can not
// end and otherwise polls with a growing pause.
func flock(ctx context.Context, fd int, shared, wait bool) error {
	how := unix.LOCK_EX
	if shared {
		how = unix.LOCK_SH
	}
	if wait && ctx.Done() == nil {
		for {
			err := unix.Flock(fd, how)
			if !errors.Is(err, unix.EINTR) {
				return err
			}
		}
	}
	pause := time.Millisecond
	for {
		err := unix.Flock(fd, how|unix.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case !errors.Is(err, unix.EWOULDBLOCK):
			return err
		case !wait:
			return ErrLocked
		}
		timer := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w (%w)", ErrLocked, ctx.Err())
		case <-timer.C:
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}
