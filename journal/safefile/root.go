package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// AnyUID in Expect.UID skips the owner check.
const AnyUID = -1

// Expect is what a safely opened file or directory must be. The zero value
// expects an owner of uid 0 (root) and checks neither mode nor size.
type Expect struct {
	// UID is the required owner, or AnyUID.
	UID int
	// Mode is the exact permission bits (including setuid, setgid and
	// sticky); 0 does not check the mode.
	Mode os.FileMode
	// DenyMode are permission bits that must be clear (for example 0o022:
	// writable by neither group nor others); 0 checks none.
	DenyMode os.FileMode
	// MaxSize bounds a regular file's size in bytes; 0 is unlimited.
	MaxSize int64
}

// Root is an open directory under which paths are resolved without ever
// following a symbolic link and without leaving the directory. The
// directory itself is opened by OpenRoot from a path the caller trusts (its
// parents are not checked). A Root is safe for concurrent use; the caller
// closes it.
type Root struct {
	fd   int
	path string
}

// OpenRoot opens dir (O_PATH|O_DIRECTORY|O_NOFOLLOW) as a Root. Check the
// directory's owner and mode with r.OpenDir(".", exp) where it matters.
func OpenRoot(dir string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOTDIR) {
		var st unix.Stat_t
		if unix.Lstat(dir, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			err = unix.ELOOP
		}
	}
	if err != nil {
		return nil, openError("open", dir, err)
	}
	return &Root{fd: fd, path: dir}, nil
}

// Path returns the directory the Root was opened from.
func (r *Root) Path() string { return r.path }

// Close releases the directory. Files opened through r stay open.
func (r *Root) Close() error {
	if r == nil || r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// Join names rel under the root, for messages.
func (r *Root) Join(rel string) string {
	if rel == "." || rel == "" {
		return r.path
	}
	return path.Join(r.path, rel)
}

// OpenFile opens the regular file rel read-only (O_NOFOLLOW|O_NONBLOCK, so
// a FIFO is refused without blocking) and checks it: regular, link count 1,
// owner, exact mode and size as exp says, and that rel still names the
// opened inode. The caller closes the file.
func (r *Root) OpenFile(rel string, exp Expect) (*os.File, error) {
	full := r.Join(rel)
	fd, err := openBeneath(r.fd, rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, openError("open", full, err)
	}
	if _, err := r.checkOpened(fd, rel, full, unix.S_IFREG, exp); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), full), nil
}

// ReadFile reads the regular file rel after the checks of OpenFile. The
// size limit is enforced again while reading, so a file that grows after
// the check is refused too, and after reading rel must still name the
// inode that was read.
func (r *Root) ReadFile(rel string, exp Expect) ([]byte, error) {
	data, _, err := r.ReadFileStat(rel, exp)
	return data, err
}

// ReadFileStat is ReadFile also returning the stat of the inode read.
func (r *Root) ReadFileStat(rel string, exp Expect) ([]byte, unix.Stat_t, error) {
	var st unix.Stat_t
	full := r.Join(rel)
	fd, err := openBeneath(r.fd, rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, st, openError("open", full, err)
	}
	f := os.NewFile(uintptr(fd), full)
	defer f.Close()
	if st, err = r.checkOpened(fd, rel, full, unix.S_IFREG, exp); err != nil {
		return nil, st, err
	}
	var src io.Reader = f
	if exp.MaxSize > 0 {
		src = io.LimitReader(f, exp.MaxSize+1)
	}
	data, err := io.ReadAll(src)
	if err != nil {
		return nil, st, fmt.Errorf("read %s: %w", full, err)
	}
	if exp.MaxSize > 0 && int64(len(data)) > exp.MaxSize {
		return nil, st, unsafe(full, ErrTooLarge, "grew past %d bytes while read", exp.MaxSize)
	}
	if err := r.sameInode(rel, full, &st); err != nil {
		return nil, st, err
	}
	return data, st, nil
}

// OpenDir opens the directory rel ("." for the root itself) as a Root after
// checking its owner and mode as exp says (MaxSize is ignored) and that rel
// still names it.
func (r *Root) OpenDir(rel string, exp Expect) (*Root, error) {
	full := r.Join(rel)
	fd, err := openBeneath(r.fd, rel, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, openError("open directory", full, err)
	}
	exp.MaxSize = 0
	if _, err := r.checkOpened(fd, rel, full, unix.S_IFDIR, exp); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &Root{fd: fd, path: full}, nil
}

// ReadDir returns the sorted names in the root directory.
func (r *Root) ReadDir() ([]string, error) {
	fd, err := unix.Openat(r.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, openError("read directory", r.path, err)
	}
	d := os.NewFile(uintptr(fd), r.path)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("read directory %s: %w", r.path, err)
	}
	sort.Strings(names)
	return names, nil
}

// Lstat returns what rel names, without following a symbolic link at its
// end (a link is reported as one).
func (r *Root) Lstat(rel string) (unix.Stat_t, error) {
	var st unix.Stat_t
	full := r.Join(rel)
	fd, err := openBeneath(r.fd, rel, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return st, openError("stat", full, err)
	}
	defer unix.Close(fd)
	if err := unix.Fstat(fd, &st); err != nil {
		return st, openError("stat", full, err)
	}
	return st, nil
}

// FileID returns the device and inode number rel names, without following
// a symbolic link at its end.
func (r *Root) FileID(rel string) (dev, ino uint64, err error) {
	st, err := r.Lstat(rel)
	return st.Dev, st.Ino, err
}

// Exists reports whether rel names anything (a dangling symbolic link
// counts).
func (r *Root) Exists(rel string) (bool, error) {
	_, err := r.Lstat(rel)
	return lstatExists(err)
}

// afterOpen runs between opening a file and re-checking its name; tests use
// it to replace the file in that window.
var afterOpen func()

// checkOpened checks the opened fd against exp and that rel still names it.
func (r *Root) checkOpened(fd int, rel, full string, kind uint32, exp Expect) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return st, openError("stat", full, err)
	}
	if err := checkStat(full, &st, kind, exp); err != nil {
		return st, err
	}
	if afterOpen != nil {
		afterOpen()
	}
	return st, r.sameInode(rel, full, &st)
}

// sameInode checks that rel still names the inode st describes.
func (r *Root) sameInode(rel, full string, st *unix.Stat_t) error {
	dev, ino, err := r.FileID(rel)
	if err != nil {
		if errors.Is(err, ErrUnsafe) {
			return err
		}
		return unsafe(full, ErrReplaced, "removed after it was opened")
	}
	if dev != st.Dev || ino != st.Ino {
		return unsafe(full, ErrReplaced, "the name now names inode %d, opened %d", ino, st.Ino)
	}
	return nil
}

// checkStat checks type, link count, owner, mode and size.
func checkStat(full string, st *unix.Stat_t, kind uint32, exp Expect) error {
	switch typ := st.Mode & unix.S_IFMT; {
	case typ == unix.S_IFLNK:
		return unsafe(full, ErrSymlink, "")
	case typ != kind && kind == unix.S_IFDIR:
		return unsafe(full, ErrNotRegular, "file type %s, not a directory", FileType(st.Mode))
	case typ != kind:
		return unsafe(full, ErrNotRegular, "file type %s", FileType(st.Mode))
	}
	if kind == unix.S_IFREG && st.Nlink == 0 {
		// Removed or renamed over between the open and the fstat: no
		// other name can change it, but it is no longer the file there.
		return unsafe(full, ErrReplaced, "removed after it was opened")
	}
	if kind == unix.S_IFREG && st.Nlink != 1 {
		return unsafe(full, ErrHardLinked, "link count %d", st.Nlink)
	}
	if exp.UID != AnyUID && int64(st.Uid) != int64(exp.UID) {
		return unsafe(full, ErrForeignOwner, "owner uid %d, want %d", st.Uid, exp.UID)
	}
	if exp.Mode != 0 {
		if got, want := st.Mode&0o7777, unixMode(exp.Mode); got != want {
			return unsafe(full, ErrUnsafeMode, "mode %04o, want %04o", got, want)
		}
	}
	if deny := unixMode(exp.DenyMode); st.Mode&deny != 0 {
		return unsafe(full, ErrUnsafeMode, "mode %04o has bits %04o set", st.Mode&0o7777, st.Mode&deny)
	}
	if exp.MaxSize > 0 && st.Size > exp.MaxSize {
		return unsafe(full, ErrTooLarge, "%d bytes, at most %d", st.Size, exp.MaxSize)
	}
	return nil
}

// FileType names the type bits of a st_mode for messages.
func FileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "fifo"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symlink"
	}
	return "regular file"
}

// unixMode converts permission and special bits of m to st_mode bits.
func unixMode(m os.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		u |= unix.S_ISUID
	}
	if m&os.ModeSetgid != 0 {
		u |= unix.S_ISGID
	}
	if m&os.ModeSticky != 0 {
		u |= unix.S_ISVTX
	}
	return u
}

// parent opens the directory holding rel for reading (to fsync it and to
// resolve its last component) and returns that component.
func (r *Root) parent(rel string) (dirfd int, base string, err error) {
	dir, base := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	if base == "" || base == "." || base == ".." {
		return -1, "", &os.PathError{Op: "open", Path: r.Join(rel), Err: unix.EINVAL}
	}
	fd, err := openBeneath(r.fd, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1, "", openError("open directory", r.Join(dir), err)
	}
	return fd, base, nil
}

// Remove unlinks the file rel (never following a link; a link itself is
// removed) and fsyncs its directory. A missing file reports os.ErrNotExist,
// after the directory is fsynced all the same: the removal an earlier run
// made may not be durable yet, and callers treat "already gone" as done.
func (r *Root) Remove(rel string) error {
	full := r.Join(rel)
	dirfd, base, err := r.parent(rel)
	if err != nil {
		return fmt.Errorf("remove %s: %w", full, err)
	}
	defer unix.Close(dirfd)
	uerr := unix.Unlinkat(dirfd, base, 0)
	if uerr != nil && !errors.Is(uerr, unix.ENOENT) {
		return &os.PathError{Op: "remove", Path: full, Err: uerr}
	}
	if err := fsync(dirfd, path.Dir(full)); err != nil {
		return fmt.Errorf("remove %s: sync directory: %w", full, err)
	}
	if uerr != nil {
		return &os.PathError{Op: "remove", Path: full, Err: uerr}
	}
	return nil
}

// Mkdir creates the directory rel with exactly perm (umask does not apply)
// and fsyncs it and its parent. An existing entry reports os.ErrExist.
func (r *Root) Mkdir(rel string, perm os.FileMode) error {
	full := r.Join(rel)
	dirfd, base, err := r.parent(rel)
	if err != nil {
		return fmt.Errorf("create directory %s: %w", full, err)
	}
	defer unix.Close(dirfd)
	if err := unix.Mkdirat(dirfd, base, 0o700); err != nil {
		return &os.PathError{Op: "mkdir", Path: full, Err: err}
	}
	fd, err := unix.Openat(dirfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return openError("create directory", full, err)
	}
	err = unix.Fchmod(fd, unixMode(perm))
	if err == nil {
		err = fsync(fd, full)
	}
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("create directory %s: %w", full, err)
	}
	if err := fsync(dirfd, path.Dir(full)); err != nil {
		return fmt.Errorf("create directory %s: sync parent: %w", full, err)
	}
	return nil
}

// Check applies OpenFile's checks of a regular file (type, one link, owner,
// mode, size) to st, which describes full: a file already open, or one
// found by Lstat.
func Check(full string, st *unix.Stat_t, exp Expect) error {
	return checkStat(full, st, unix.S_IFREG, exp)
}

// CreateNew creates the regular file rel read-write with O_EXCL (an
// existing name reports os.ErrExist and is left untouched), gives it
// exactly perm, and fsyncs it and its directory before returning it open.
// The caller closes it.
func (r *Root) CreateNew(rel string, perm os.FileMode) (*os.File, error) {
	full := r.Join(rel)
	fd, err := openBeneath(r.fd, rel, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0o600)
	if err != nil {
		return nil, openError("create", full, err)
	}
	f := os.NewFile(uintptr(fd), full)
	err = unix.Fchmod(fd, unixMode(perm)) // the umask must not change it
	if err == nil {
		err = fsync(fd, full)
	}
	if err == nil {
		var dirfd int
		if dirfd, _, err = r.parent(rel); err == nil {
			err = fsync(dirfd, path.Dir(full))
			unix.Close(dirfd)
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("create %s: %w", full, err)
	}
	return f, nil
}
