package safefile

import (
	"errors"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// noOpenat2 is set once the kernel reports openat2 as missing; tests set it
// to exercise the walk.
var noOpenat2 atomic.Bool

// openBeneath opens rel relative to dirfd without following any symbolic
// link and without leaving dirfd. With O_PATH|O_NOFOLLOW a final symbolic
// link is opened itself, as openat2 does. A symbolic link where a
// directory is required reports ELOOP, not ENOTDIR.
func openBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	fd, err := resolveBeneath(dirfd, rel, flags, mode)
	if errors.Is(err, unix.ENOTDIR) && flags&unix.O_DIRECTORY != 0 {
		if lfd, lerr := resolveBeneath(dirfd, rel, unix.O_PATH|unix.O_NOFOLLOW, 0); lerr == nil {
			var st unix.Stat_t
			if unix.Fstat(lfd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				err = unix.ELOOP
			}
			unix.Close(lfd)
		}
	}
	return fd, err
}

func resolveBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	if err := checkRel(rel); err != nil {
		return -1, err
	}
	flags |= unix.O_CLOEXEC
	if !noOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode), Resolve: resolveFlags}
		for range 16 {
			fd, err := unix.Openat2(dirfd, rel, &how)
			switch {
			case err == nil:
				return fd, nil
			case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
				continue // a concurrent rename during resolution; try again
			case errors.Is(err, unix.ENOSYS):
				noOpenat2.Store(true)
			case errors.Is(err, unix.EPERM):
				// A seccomp filter that does not know openat2 (container
				// runtimes answer EPERM, not ENOSYS); the walk reports a
				// real EPERM the same way.
			default:
				return -1, err
			}
			break
		}
	}
	return walkBeneath(dirfd, rel, flags, mode)
}

// checkRel refuses absolute paths and ".." components before resolution.
func checkRel(rel string) error {
	if rel == "" || strings.HasPrefix(rel, "/") {
		return unix.EXDEV
	}
	for _, c := range strings.Split(rel, "/") {
		if c == ".." {
			return unix.EXDEV
		}
	}
	return nil
}

// walkBeneath is openBeneath without openat2: every directory component is
// opened with O_NOFOLLOW relative to the previous one.
func walkBeneath(dirfd int, rel string, flags int, mode uint32) (int, error) {
	var parts []string
	for _, c := range strings.Split(rel, "/") {
		if c != "" && c != "." {
			parts = append(parts, c)
		}
	}
	if len(parts) == 0 {
		return unix.Openat(dirfd, ".", flags, mode)
	}
	cur := dirfd
	defer func() {
		if cur != dirfd {
			unix.Close(cur)
		}
	}()
	for _, c := range parts[:len(parts)-1] {
		next, err := unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOTDIR) {
			var st unix.Stat_t
			if unix.Fstatat(cur, c, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				err = unix.ELOOP
			}
		}
		if err != nil {
			return -1, err
		}
		if cur != dirfd {
			unix.Close(cur)
		}
		cur = next
	}
	return unix.Openat(cur, parts[len(parts)-1], flags|unix.O_NOFOLLOW, mode)
}

// openError turns an errno from resolving a path into the package's
// vocabulary: links and escapes are unsafe, anything else keeps its errno
// (so errors.Is works with os.ErrNotExist and os.ErrExist).
func openError(op, full string, err error) error {
	var ue *UnsafeError
	if errors.As(err, &ue) {
		return err
	}
	switch {
	case errors.Is(err, unix.ELOOP):
		return unsafe(full, ErrSymlink, "a symbolic link is in the path")
	case errors.Is(err, unix.EXDEV):
		return unsafe(full, ErrEscapes, "")
	case errors.Is(err, unix.ENXIO):
		return unsafe(full, ErrNotRegular, "a socket or device")
	}
	return &os.PathError{Op: op, Path: full, Err: err}
}
