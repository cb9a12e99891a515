package lease

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal"
)

// Size limits of the records (CONTRACT §3.2).
const (
	maxRecord          = 4096
	maxPreparingRecord = 16384
	maxFinalConfig     = 1 << 20
)

// dirHandle is the generations directory opened once; every file in it is
// opened relative to the descriptor, so a renamed or replaced parent path
// cannot redirect later opens.
type dirHandle struct {
	path string
	fd   int
	uid  int
}

// openDir opens dir without following a final symbolic link and requires a
// directory owned by uid that neither group nor others can write.
func openDir(dir string, uid int) (*dirHandle, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			var st unix.Stat_t
			if unix.Lstat(dir, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return nil, refuse(dir, "symlink", ErrSymlink, "generations directory")
			}
		}
		return nil, fmt.Errorf("open generations directory %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("stat generations directory %s: %w", dir, err)
	}
	if int(st.Uid) != uid {
		unix.Close(fd)
		return nil, refuse(dir, "owner", ErrForeignOwner, "owner uid %d, want %d", st.Uid, uid)
	}
	if st.Mode&0o022 != 0 {
		unix.Close(fd)
		return nil, refuse(dir, "mode", ErrUnsafeMode, "directory mode %04o is writable by group or others", st.Mode&0o7777)
	}
	return &dirHandle{path: dir, fd: fd, uid: uid}, nil
}

func (d *dirHandle) close() error { return unix.Close(d.fd) }

func (d *dirHandle) join(name string) string { return filepath.Join(d.path, name) }

// openat opens name (one path component) below the directory without
// following any symbolic link. flags are added to
// O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC; O_NONBLOCK keeps a FIFO from blocking.
func (d *dirHandle) openat(name string, flags int, mode uint32) (int, error) {
	flags |= unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	how := unix.OpenHow{
		Flags:   uint64(flags),
		Mode:    uint64(mode),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for {
		fd, err := unix.Openat2(d.fd, name, &how)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.ENOSYS) {
			// Kernels before 5.6 lack openat2; a single component
			// opened with O_NOFOLLOW resolves no link either.
			fd, err = unix.Openat(d.fd, name, flags, mode)
		}
		if errors.Is(err, unix.ELOOP) {
			return -1, refuse(d.join(name), "symlink", ErrSymlink, "refused without following it")
		}
		return fd, err
	}
}

// lstat stats name in the directory without following a link.
func (d *dirHandle) lstat(name string, st *unix.Stat_t) error {
	return unix.Fstatat(d.fd, name, st, unix.AT_SYMLINK_NOFOLLOW)
}

// checkPrivate applies the per-file checks every record and lease shares.
func checkPrivate(path string, st *unix.Stat_t, uid int) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return refuse(path, "symlink", ErrSymlink, "")
	default:
		return refuse(path, "type", ErrNotRegular, "file type %s", fileType(st.Mode))
	}
	if st.Nlink != 1 {
		return refuse(path, "links", ErrHardLinked, "link count %d", st.Nlink)
	}
	if int(st.Uid) != uid {
		return refuse(path, "owner", ErrForeignOwner, "owner uid %d, want %d", st.Uid, uid)
	}
	if st.Mode&0o7777 != 0o600 {
		return refuse(path, "mode", ErrUnsafeMode, "mode %04o, want 0600", st.Mode&0o7777)
	}
	return nil
}

func fileType(mode uint32) string {
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

// readRecord reads name with every check of CONTRACT §3.2: opened without
// links and without blocking, a private regular file of at most limit
// bytes, and, after reading, the path still names the inode that was read.
// A missing file returns an error matching os.ErrNotExist.
func (d *dirHandle) readRecord(name string, limit int64) ([]byte, unix.Stat_t, error) {
	var st unix.Stat_t
	path := d.join(name)
	fd, err := d.openat(name, unix.O_RDONLY, 0)
	if err != nil {
		var ce *CheckError
		if errors.As(err, &ce) {
			return nil, st, err
		}
		return nil, st, fmt.Errorf("open %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, st, fmt.Errorf("stat %s: %w", path, err)
	}
	if err := checkPrivate(path, &st, d.uid); err != nil {
		return nil, st, err
	}
	if st.Size > limit {
		return nil, st, refuse(path, "size", ErrTooLarge, "%d bytes, at most %d", st.Size, limit)
	}
	buf := make([]byte, st.Size+1)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, st, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(n) > limit {
		return nil, st, refuse(path, "size", ErrTooLarge, "grew past %d bytes while read", limit)
	}
	if err := d.sameInode(name, &st); err != nil {
		return nil, st, err
	}
	return buf[:n], st, nil
}

// sameInode checks that name still names the inode described by st.
func (d *dirHandle) sameInode(name string, st *unix.Stat_t) error {
	var now unix.Stat_t
	if err := d.lstat(name, &now); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return refuse(d.join(name), "inode", ErrInodeReplaced, "the path was removed after it was opened")
		}
		return fmt.Errorf("stat %s: %w", d.join(name), err)
	}
	if now.Dev != st.Dev || now.Ino != st.Ino {
		return refuse(d.join(name), "inode", ErrInodeReplaced, "the path names inode %d, opened %d", now.Ino, st.Ino)
	}
	return nil
}

// exists reports whether name is present in any form (a dangling symbolic
// link counts).
func (d *dirHandle) exists(name string) (bool, error) {
	var st unix.Stat_t
	err := d.lstat(name, &st)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	return false, fmt.Errorf("stat %s: %w", d.join(name), err)
}

// publish writes data as name atomically: a private temporary
// .generation-<name> file in the directory (replacing one an interrupted run
// left; writers of one record hold the installation lock) is written, given mode 0600, fsynced and closed,
// then renamed over name (or, with noReplace, linked in only if name is
// absent), and the directory is fsynced. The temporary file is removed on
// any failure before the rename. With noReplace an existing name returns an
// error matching os.ErrExist and changes nothing.
func (d *dirHandle) publish(name string, data []byte, noReplace bool) error {
	path := d.join(name)
	tmp, err := d.writeTemp(name, data)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	journal.Failpoint("record-before-rename")
	if noReplace {
		err = unix.Renameat2(d.fd, tmp, d.fd, name, unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
			if err = unix.Linkat(d.fd, tmp, d.fd, name, 0); err == nil {
				unix.Unlinkat(d.fd, tmp, 0)
			}
		}
	} else {
		err = unix.Renameat(d.fd, tmp, d.fd, name)
	}
	if err != nil {
		unix.Unlinkat(d.fd, tmp, 0)
		if errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("write %s: %w", path, os.ErrExist)
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := unix.Fsync(d.fd); err != nil {
		return fmt.Errorf("sync directory %s: %w", d.path, err)
	}
	return nil
}

func (d *dirHandle) writeTemp(target string, data []byte) (string, error) {
	name := ".generation-" + target
	if err := unix.Unlinkat(d.fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return "", err
	}
	fd, err := d.openat(name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	err = func() error {
		for rest := data; len(rest) > 0; {
			n, err := unix.Write(fd, rest)
			if err != nil {
				if errors.Is(err, unix.EINTR) {
					continue
				}
				return err
			}
			rest = rest[n:]
		}
		if err := unix.Fchmod(fd, 0o600); err != nil {
			return err
		}
		return unix.Fsync(fd)
	}()
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlinkat(d.fd, name, 0)
		return "", err
	}
	return name, nil
}

// remove unlinks name (a record, never a lease) and fsyncs the directory.
// A missing name is success.
func (d *dirHandle) remove(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove %s: %w", d.join(name), err)
	}
	if err := unix.Fsync(d.fd); err != nil {
		return fmt.Errorf("sync directory %s: %w", d.path, err)
	}
	return nil
}
