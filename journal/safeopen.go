package journal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"sync/atomic"

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
	// MaxSize bounds a regular file's size in bytes; 0 is unlimited.
	MaxSize int64
}

// ErrUnsafe is returned (wrapped in *UnsafeError) when a path in a tree
// another account can write is not what it must be: a symbolic link
// anywhere in it, not a regular file (or directory), hard-linked, owned by
// someone else, with other permission bits, too large, or replaced while it
// was being opened. A missing file is not unsafe: it reports
// os.ErrNotExist.
var ErrUnsafe = errors.New("unsafe path")

// UnsafeError names the refused path and why it was refused.
type UnsafeError struct {
	Path   string
	Reason string
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("refusing %s: %s", e.Path, e.Reason)
}

// Unwrap lets callers test with errors.Is(err, ErrUnsafe).
func (e *UnsafeError) Unwrap() error { return ErrUnsafe }

// Root is an open directory under which paths are resolved without ever
// following a symbolic link and without leaving the directory: openat2(2)
// with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS, or on
// kernels without openat2 a walk that opens one component at a time with
// O_NOFOLLOW. The directory itself is opened by OpenRoot from a path the
// caller trusts (its parents are not checked). A Root is safe for
// concurrent use; the caller closes it.
type Root struct {
	fd   int
	path string
}

// OpenRoot opens dir (O_PATH|O_DIRECTORY|O_NOFOLLOW) as a Root. Check the
// directory's owner and mode with r.OpenDir(".", exp) where it matters.
func OpenRoot(dir string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
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

// join names rel under the root for messages.
func (r *Root) join(rel string) string {
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
	full := r.join(rel)
	fd, err := openBeneath(r.fd, rel, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, openError("open", full, err)
	}
	if err := r.checkOpened(fd, rel, full, unix.S_IFREG, exp); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), full), nil
}

// ReadFile reads the regular file rel after the checks of OpenFile. The
// size limit is enforced again while reading, so a file that grows after
// the check is refused too.
func (r *Root) ReadFile(rel string, exp Expect) ([]byte, error) {
	f, err := r.OpenFile(rel, exp)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var src io.Reader = f
	if exp.MaxSize > 0 {
		src = io.LimitReader(f, exp.MaxSize+1)
	}
	data, err := io.ReadAll(src)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	if exp.MaxSize > 0 && int64(len(data)) > exp.MaxSize {
		return nil, &UnsafeError{Path: f.Name(), Reason: fmt.Sprintf("larger than %d bytes", exp.MaxSize)}
	}
	return data, nil
}

// OpenDir opens the directory rel ("." for the root itself) as a Root after
// checking its owner and mode as exp says (MaxSize is ignored) and that rel
// still names it.
func (r *Root) OpenDir(rel string, exp Expect) (*Root, error) {
	full := r.join(rel)
	fd, err := openBeneath(r.fd, rel, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, openError("open directory", full, err)
	}
	exp.MaxSize = 0
	if err := r.checkOpened(fd, rel, full, unix.S_IFDIR, exp); err != nil {
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

// FileID returns the device and inode number rel names, without following
// a symbolic link at its end.
func (r *Root) FileID(rel string) (dev, ino uint64, err error) {
	full := r.join(rel)
	fd, err := openBeneath(r.fd, rel, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return 0, 0, openError("stat", full, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, 0, openError("stat", full, err)
	}
	return st.Dev, st.Ino, nil
}

// afterOpen runs between opening a file and re-checking its name; tests use
// it to replace the file in that window.
var afterOpen func()

// checkOpened checks the opened fd against exp and that rel still names it.
func (r *Root) checkOpened(fd int, rel, full string, kind uint32, exp Expect) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return openError("stat", full, err)
	}
	if err := checkStat(full, &st, kind, exp); err != nil {
		return err
	}
	if afterOpen != nil {
		afterOpen()
	}
	dev, ino, err := r.FileID(rel)
	if err != nil {
		if errors.Is(err, ErrUnsafe) {
			return err
		}
		return &UnsafeError{Path: full, Reason: "removed while it was being opened"}
	}
	if dev != st.Dev || ino != st.Ino {
		return &UnsafeError{Path: full, Reason: "replaced while it was being opened"}
	}
	return nil
}

// checkStat checks type, link count, owner, mode and size.
func checkStat(full string, st *unix.Stat_t, kind uint32, exp Expect) error {
	unsafe := func(format string, args ...any) error {
		return &UnsafeError{Path: full, Reason: fmt.Sprintf(format, args...)}
	}
	switch typ := st.Mode & unix.S_IFMT; {
	case typ == unix.S_IFLNK:
		return unsafe("is a symbolic link")
	case typ != kind && kind == unix.S_IFDIR:
		return unsafe("is not a directory")
	case typ != kind:
		return unsafe("is not a regular file")
	}
	if kind == unix.S_IFREG && st.Nlink != 1 {
		return unsafe("has %d hard links", st.Nlink)
	}
	if exp.UID != AnyUID && int64(st.Uid) != int64(exp.UID) {
		return unsafe("is owned by uid %d, not %d", st.Uid, exp.UID)
	}
	if exp.Mode != 0 {
		if got, want := st.Mode&0o7777, unixMode(exp.Mode); got != want {
			return unsafe("has mode %04o, not %04o", got, want)
		}
	}
	if exp.MaxSize > 0 && st.Size > exp.MaxSize {
		return unsafe("is %d bytes, more than %d", st.Size, exp.MaxSize)
	}
	return nil
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

// openError turns an errno from resolving a path into ours: links and
// escapes are unsafe, anything else keeps its errno (so errors.Is works
// with os.ErrNotExist and os.ErrExist).
func openError(op, full string, err error) error {
	var ue *UnsafeError
	if errors.As(err, &ue) {
		return err
	}
	switch {
	case errors.Is(err, unix.ELOOP):
		return &UnsafeError{Path: full, Reason: "a symbolic link is in the path"}
	case errors.Is(err, unix.EXDEV):
		return &UnsafeError{Path: full, Reason: "the path leaves its root directory"}
	case errors.Is(err, unix.ENXIO):
		return &UnsafeError{Path: full, Reason: "is not a regular file"}
	}
	return &os.PathError{Op: op, Path: full, Err: err}
}

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
			case errors.Is(err, unix.EPERM) && flags&unix.O_CREAT == 0:
				// A seccomp filter that does not know openat2; the walk
				// reports a real EPERM the same way.
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

// parent opens the directory holding rel for reading (to fsync it and to
// resolve its last component) and returns that component.
func (r *Root) parent(rel string) (dirfd int, dir, base string, err error) {
	dir, base = path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	if base == "" || base == "." || base == ".." {
		return -1, "", "", &os.PathError{Op: "open", Path: r.join(rel), Err: unix.EINVAL}
	}
	fd, err := openBeneath(r.fd, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1, "", "", openError("open directory", r.join(dir), err)
	}
	return fd, dir, base, nil
}

// AtomicWrite replaces rel with data like the package's AtomicWrite, with
// every name resolved under the root: the temporary file "."+base+".tmp"
// (one an interrupted run left is removed first) is created with O_EXCL in
// the directory opened safely, renamed relative to that directory, and the
// directory fsynced. Callers serialize writes of one path.
func (r *Root) AtomicWrite(rel string, data []byte, perm os.FileMode) error {
	return r.AtomicWriteTemp(rel, "", data, perm)
}

// AtomicWriteTemp is AtomicWrite with the temporary file named prefix+base
// (for example ".generation-" gives ".generation-3.lease-identity"), for
// formats whose readers know their temporary files. An empty prefix means
// the temporary file "."+base+".tmp".
func (r *Root) AtomicWriteTemp(rel, prefix string, data []byte, perm os.FileMode) error {
	full := r.join(rel)
	dirfd, _, base, err := r.parent(rel)
	if err != nil {
		return fmt.Errorf("write %s: %w", full, err)
	}
	defer unix.Close(dirfd)
	tmp := "." + base + ".tmp"
	if prefix != "" {
		tmp = prefix + base
	}
	if err := writeTempAt(dirfd, tmp, data, perm); err != nil {
		return fmt.Errorf("write %s: %w", full, err)
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, base); err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return fmt.Errorf("write %s: %w", full, err)
	}
	failpoint("atomic-after-rename")
	if err := unix.Fsync(dirfd); err != nil {
		return fmt.Errorf("write %s: sync directory: %w", full, err)
	}
	return nil
}

// PublishOnce publishes data at rel exactly once, like the package's
// PublishOnce, with every name resolved under the root. An existing file is
// compared only if it is a regular file with one link, owned by the
// effective uid and of mode perm; otherwise it is refused as unsafe. The
// temporary file is "."+base+".tmp"; callers serialize publishers of one
// path.
func (r *Root) PublishOnce(rel string, data []byte, perm os.FileMode) error {
	full := r.join(rel)
	dirfd, _, base, err := r.parent(rel)
	if err != nil {
		return fmt.Errorf("publish %s: %w", full, err)
	}
	defer unix.Close(dirfd)
	exp := Expect{UID: os.Geteuid(), Mode: perm}
	same, err := sameContentsAt(dirfd, base, full, data, exp)
	switch {
	case err == nil && same:
		return nil
	case err == nil:
		return &ConflictError{Path: full}
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("publish %s: %w", full, err)
	}
	tmp := "." + base + ".tmp"
	if err := writeTempAt(dirfd, tmp, data, perm); err != nil {
		return fmt.Errorf("publish %s: %w", full, err)
	}
	err = unix.Renameat2(dirfd, tmp, dirfd, base, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		err = unix.Linkat(dirfd, tmp, dirfd, base, 0)
	}
	unix.Unlinkat(dirfd, tmp, 0) // gone after a rename; the link's source otherwise
	if errors.Is(err, unix.EEXIST) {
		same, rerr := sameContentsAt(dirfd, base, full, data, exp)
		if rerr != nil {
			return fmt.Errorf("publish %s: %w", full, rerr)
		}
		if !same {
			return &ConflictError{Path: full}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("publish %s: %w", full, err)
	}
	failpoint("publish-after-link")
	if err := unix.Fsync(dirfd); err != nil {
		return fmt.Errorf("publish %s: sync directory: %w", full, err)
	}
	return nil
}

// Remove unlinks the file rel (never following a link; a link itself is
// removed) and fsyncs its directory. A missing file reports os.ErrNotExist.
func (r *Root) Remove(rel string) error {
	full := r.join(rel)
	dirfd, _, base, err := r.parent(rel)
	if err != nil {
		return fmt.Errorf("remove %s: %w", full, err)
	}
	defer unix.Close(dirfd)
	if err := unix.Unlinkat(dirfd, base, 0); err != nil {
		return &os.PathError{Op: "remove", Path: full, Err: err}
	}
	if err := unix.Fsync(dirfd); err != nil {
		return fmt.Errorf("remove %s: sync directory: %w", full, err)
	}
	return nil
}

// Mkdir creates the directory rel with exactly perm (umask does not apply)
// and fsyncs its parent. An existing entry reports os.ErrExist.
func (r *Root) Mkdir(rel string, perm os.FileMode) error {
	full := r.join(rel)
	dirfd, _, base, err := r.parent(rel)
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
		err = unix.Fsync(fd)
	}
	unix.Close(fd)
	if err != nil {
		return fmt.Errorf("create directory %s: %w", full, err)
	}
	if err := unix.Fsync(dirfd); err != nil {
		return fmt.Errorf("create directory %s: sync parent: %w", full, err)
	}
	return nil
}

// writeTempAt writes data to the private temporary file name in dirfd
// (removing one an interrupted run left, then O_EXCL|O_NOFOLLOW), sets
// perm, and fsyncs and closes it. On error no temporary file is left.
func writeTempAt(dirfd int, name string, data []byte, perm os.FileMode) error {
	if err := unix.Unlinkat(dirfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove temporary file %s: %w", name, err)
	}
	fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create temporary file %s: %w", name, err)
	}
	err = func() error {
		for rest := data; len(rest) > 0; {
			n, err := unix.Write(fd, rest)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return err
			}
			rest = rest[n:]
		}
		if err := unix.Fchmod(fd, unixMode(perm)); err != nil {
			return err
		}
		failpoint("atomic-before-sync")
		return unix.Fsync(fd)
	}()
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlinkat(dirfd, name, 0)
		return fmt.Errorf("write temporary file %s: %w", name, err)
	}
	return nil
}

// sameContentsAt reports whether name in dirfd is a file that passes exp
// and holds exactly data. A missing file reports os.ErrNotExist.
func sameContentsAt(dirfd int, name, full string, data []byte, exp Expect) (bool, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, openError("open", full, err)
	}
	f := os.NewFile(uintptr(fd), full)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, openError("stat", full, err)
	}
	if err := checkStat(full, &st, unix.S_IFREG, exp); err != nil {
		return false, err
	}
	if st.Size != int64(len(data)) {
		return false, nil
	}
	got, err := io.ReadAll(io.LimitReader(f, int64(len(data))+1))
	if err != nil {
		return false, fmt.Errorf("read %s: %w", full, err)
	}
	return string(got) == string(data), nil
}
