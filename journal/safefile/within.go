package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// OpenRootIn opens the directory rel beneath the trusted directory base as
// a Root, following a symbolic link in none of rel's components, and
// checks it as exp says. Use it for a directory whose parents below base
// someone else can write (a service account's home).
func OpenRootIn(base, rel string, exp Expect) (*Root, error) {
	b, err := OpenRoot(base)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return b.OpenDir(rel, exp)
}

// RemoveAll removes rel and everything under it without ever following a
// symbolic link: every directory is opened with O_NOFOLLOW relative to its
// parent's descriptor, and a link is unlinked, never entered. A directory
// of the process's own uid that it may not read or change (mode 0, 0500)
// is given mode 0700 first, as rm -rf needs but does not do. A mount point
// inside the tree is refused, never entered. A symbolic
// link standing for one of rel's parents is itself removed (what lies
// beyond it is not rel's, and is left alone). A missing rel is no error.
// The directory that held what was removed is fsynced.
func (r *Root) RemoveAll(rel string) error {
	full := r.Join(rel)
	if err := checkRel(rel); err != nil {
		return openError("remove", full, err)
	}
	var parts []string
	for _, c := range strings.Split(rel, "/") {
		if c != "" && c != "." {
			parts = append(parts, c)
		}
	}
	if len(parts) == 0 {
		return &os.PathError{Op: "remove", Path: full, Err: unix.EINVAL}
	}
	cur, err := unix.Openat(r.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return openError("remove", r.path, err)
	}
	defer func() { unix.Close(cur) }()
	dir := r.path
	for i, c := range parts {
		name := path.Join(dir, c)
		if i == len(parts)-1 {
			if err := removeAt(cur, c, name); err != nil {
				return err
			}
			break
		}
		next, err := unix.Openat(cur, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			return fsync(cur, dir) // an earlier run's removal may not be durable yet
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			var st unix.Stat_t
			if unix.Fstatat(cur, c, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				if err := unix.Unlinkat(cur, c, 0); err != nil && !errors.Is(err, unix.ENOENT) {
					return &os.PathError{Op: "remove", Path: name, Err: err}
				}
				break
			}
			return unsafe(name, ErrNotRegular, "not a directory")
		}
		if err != nil {
			return &os.PathError{Op: "open", Path: name, Err: err}
		}
		unix.Close(cur)
		cur, dir = next, name
	}
	if err := fsync(cur, dir); err != nil {
		return fmt.Errorf("remove %s: sync directory: %w", full, err)
	}
	return nil
}

// RemoveEmptyDir removes the directory rel when it is empty; a missing
// rel, a non-empty directory, a link and a path through a link are left
// alone. It does not fsync.
func (r *Root) RemoveEmptyDir(rel string) error {
	dirfd, base, err := r.parent(rel)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrUnsafe) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	err = unix.Unlinkat(dirfd, base, unix.AT_REMOVEDIR)
	switch {
	case err == nil, errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOTDIR):
		return nil
	}
	return &os.PathError{Op: "remove", Path: r.Join(rel), Err: err}
}

// errMountPoint: a directory of the tree is where another file system (or
// a bind mount) is mounted; its contents are not the tree's to remove.
var errMountPoint = errors.New("a file system is mounted there: unmount it, then rerun")

// mountPoint reports whether the directory fd is on another mount than its
// parent dfd (mount ids where the kernel has them, devices otherwise).
func mountPoint(dfd, fd int) bool {
	var a, b unix.Statx_t
	if unix.Statx(dfd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &a) == nil &&
		unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID, &b) == nil &&
		a.Mask&b.Mask&unix.STATX_MNT_ID != 0 {
		return a.Mnt_id != b.Mnt_id
	}
	var pa, pb unix.Stat_t
	return unix.Fstat(dfd, &pa) == nil && unix.Fstat(fd, &pb) == nil && pa.Dev != pb.Dev
}

// ownDir reports whether name in dfd is a directory (not a link) owned by
// this process's effective uid.
func ownDir(dfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil &&
		st.Mode&unix.S_IFMT == unix.S_IFDIR && int(st.Uid) == os.Geteuid()
}

// removeAt removes name in the directory dfd and everything under it
// (full is its path, for errors), never following a link.
func removeAt(dfd int, name, full string) error {
	err := unix.Unlinkat(dfd, name, 0)
	switch {
	case err == nil, errors.Is(err, unix.ENOENT):
		return nil
	case !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM):
		return &os.PathError{Op: "remove", Path: full, Err: err}
	}
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.EACCES) && ownDir(dfd, name) {
		// A directory of ours that we may not read (mode 0): made
		// readable, then opened. The chmod follows a link at name, which
		// a swap after the check could put there; it can only change a
		// file of this same owner, who may change it anyway.
		if unix.Fchmodat(dfd, name, 0o700, 0) == nil {
			fd, err = unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
	}
	if err != nil {
		return &os.PathError{Op: "open", Path: full, Err: err}
	}
	dir := os.NewFile(uintptr(fd), full)
	defer dir.Close()
	if mountPoint(dfd, fd) {
		return &os.PathError{Op: "remove", Path: full, Err: errMountPoint}
	}
	// A directory of ours that we may not change (mode 0500): made
	// writable through the descriptor, so that its entries can go.
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil && int(st.Uid) == os.Geteuid() && st.Mode&0o300 != 0o300 {
		if err := unix.Fchmod(fd, 0o700); err != nil {
			return &os.PathError{Op: "chmod", Path: full, Err: err}
		}
	}
	for {
		names, rerr := dir.Readdirnames(256)
		for _, n := range names {
			if err := removeAt(fd, n, path.Join(full, n)); err != nil {
				return err
			}
		}
		if rerr == io.EOF || len(names) == 0 {
			break
		}
		if rerr != nil {
			return &os.PathError{Op: "read directory", Path: full, Err: rerr}
		}
		// Entries were removed under the open descriptor: read again
		// from the start.
		if _, err := dir.Seek(0, io.SeekStart); err != nil {
			return &os.PathError{Op: "read directory", Path: full, Err: err}
		}
	}
	if err := unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: full, Err: err}
	}
	return nil
}

// RemoveTree removes path and everything under it as RemoveAll does, path
// being a name in a trusted directory (its parents are resolved as they
// are). A missing path is no error. It fsyncs path's parent.
func RemoveTree(p string) error {
	parent, base := path.Split(path.Clean(p))
	if parent == "" {
		parent = "."
	}
	dfd, err := unix.Open(parent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("remove %s: open %s: %w", p, parent, err)
	}
	defer unix.Close(dfd)
	if err := removeAt(dfd, base, p); err != nil {
		return err
	}
	if err := SyncDir(parent); err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return nil
}

// SetDir gives the directory dir (a name in a trusted directory) the owner
// uid:gid (-1 keeps one) and exactly mode, through a descriptor opened
// with O_NOFOLLOW, so a symbolic link or anything not a directory found
// there is refused and never changed, and fsyncs it.
func SetDir(dir string, uid, gid int, mode os.FileMode) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOTDIR) {
		var st unix.Stat_t
		if unix.Lstat(dir, &st) == nil {
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				err = unix.ELOOP
			} else {
				return unsafe(dir, ErrNotRegular, "file type %s, not a directory", FileType(st.Mode))
			}
		}
	}
	if err != nil {
		return openError("open directory", dir, err)
	}
	defer unix.Close(fd)
	if uid != -1 || gid != -1 {
		if err := unix.Fchown(fd, uid, gid); err != nil {
			return &os.PathError{Op: "chown", Path: dir, Err: err}
		}
	}
	if err := unix.Fchmod(fd, unixMode(mode)); err != nil {
		return &os.PathError{Op: "chmod", Path: dir, Err: err}
	}
	return fsync(fd, dir)
}
