package lease

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// LockHolders returns the processes that hold, or wait for, a lock on the
// file at path as /proc/locks lists them, each with its command (argv[0])
// and real uid: a lock is listed only while an open file description of a
// live process holds it. It takes no lock and opens nothing: status uses it
// to tell a workflow that is running (its journal's lock is held) from one
// that was interrupted. The path is not followed; a missing file has no
// holder.
func LockHolders(path string) ([]Holder, error) {
	return lockHolders(path, "/proc")
}

func lockHolders(path, proc string) ([]Holder, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return []Holder{}, nil
		}
		return nil, fmt.Errorf("lock holders of %s: %w", path, &os.PathError{Op: "lstat", Path: path, Err: err})
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return []Holder{}, nil // never a lock this program took
	}
	key := lockKey(st.Dev, st.Ino)
	locks, err := readProcLocks(proc+"/locks", map[string]bool{key: true})
	if err != nil {
		return nil, err
	}
	hs := holdersOf(proc, locks[key], nil)
	if hs == nil {
		hs = []Holder{}
	}
	return hs, nil
}
