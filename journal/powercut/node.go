//go:build crashtest

package powercut

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is a loopback node that reports fsyncs to its FS and keeps the
// inodes of removed durable names alive in limbo.
type node struct {
	fs.LoopbackNode
	pc *FS
}

var (
	_ fs.NodeFsyncer         = (*node)(nil)
	_ fs.NodeOpener          = (*node)(nil)
	_ fs.NodeCreater         = (*node)(nil)
	_ fs.NodeOpendirHandler  = (*node)(nil)
	_ fs.NodeUnlinker        = (*node)(nil)
	_ fs.NodeRmdirer         = (*node)(nil)
	_ fs.NodeRenamer         = (*node)(nil)
	_ fs.NodeReaddirer       = (*node)(nil)
	_ fs.NodeStatfser        = (*node)(nil)
	_ fs.NodeSymlinker       = (*node)(nil)
	_ fs.NodeReadlinker      = (*node)(nil)
	_ fs.NodeLinker          = (*node)(nil)
	_ fs.NodeMkdirer         = (*node)(nil)
	_ fs.NodeSetattrer       = (*node)(nil)
	_ fs.NodeGetattrer       = (*node)(nil)
	_ fs.FileReleasedirer    = (*dirHandle)(nil)
	_ fs.FileReaddirenter    = (*dirHandle)(nil)
	_ fs.FileFsyncer         = (*file)(nil)
	_ fs.FilePassthroughFder = (*fs.LoopbackFile)(nil)
)

// backingPath is the node's path in the backing directory.
func (n *node) backingPath() string {
	return filepath.Join(n.RootData.Path, n.Path(n.RootData.RootNode.EmbeddedInode()))
}

// loopFile is the part of *fs.LoopbackFile the kernel may call. Passthrough
// is left out on purpose: a passthrough file's reads and writes would reach
// the backing file without the server, and O_DIRECT needs the server's
// buffered path.
type loopFile interface {
	fs.FileReader
	fs.FileWriter
	fs.FileFlusher
	fs.FileReleaser
	fs.FileFsyncer
	fs.FileGetattrer
	fs.FileSetattrer
	fs.FileLseeker
	fs.FileAllocater
	fs.FileStatxer
}

// file is an open regular file; fd is its backing descriptor.
type file struct {
	loopFile
	fd int
}

func wrapFile(fh fs.FileHandle) fs.FileHandle {
	lf, ok := fh.(*fs.LoopbackFile)
	if !ok {
		return fh
	}
	fd, _ := lf.PassthroughFd()
	return &file{loopFile: lf, fd: fd}
}

// Open serves O_DIRECT opens with a buffered backing file: the server's
// buffers are not aligned for O_DIRECT, and the kernel does not cache the
// file's pages for such an open anyway.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags&^syscall.O_DIRECT)
	if errno != 0 {
		return nil, 0, errno
	}
	return wrapFile(fh), fuseFlags, 0
}

// Create is Open for a new name.
func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	in, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags&^syscall.O_DIRECT, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return in, wrapFile(fh), fuseFlags, 0
}

// dirStream is the part of the loopback directory stream the kernel may
// call; its Fsyncdir is left out so that FSYNCDIR reaches node.Fsync.
type dirStream interface {
	fs.FileReaddirenter
	fs.FileSeekdirer
	fs.FileReleasedirer
}

// dirHandle is an open directory: a loopback stream for reading and a
// descriptor for fsync.
type dirHandle struct {
	dirStream
	fd int
}

func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) {
	d.dirStream.Releasedir(ctx, flags)
	syscall.Close(d.fd)
}

// OpendirHandle opens the directory with a handle that has no Fsyncdir of
// its own, so that the kernel's FSYNCDIR reaches Fsync below.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	p := n.backingPath()
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, fs.ToErrno(err)
	}
	ds, errno := fs.NewLoopbackDirStream(p)
	if errno != 0 {
		syscall.Close(fd)
		return nil, 0, errno
	}
	stream, ok := ds.(dirStream)
	if !ok {
		ds.Close()
		syscall.Close(fd)
		return nil, 0, syscall.ENOTSUP
	}
	return &dirHandle{dirStream: stream, fd: fd}, 0, 0
}

// Fsync makes a file's content (and, unless FUSE_FSYNC_FDATASYNC is set,
// its mode and owner) or a directory's entries durable.
func (n *node) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	dataOnly := flags&1 != 0
	switch h := fh.(type) {
	case *file:
		if errno := h.loopFile.Fsync(ctx, flags); errno != 0 {
			return errno
		}
		return fs.ToErrno(n.pc.syncFile(h.fd, dataOnly))
	case *dirHandle:
		if err := syscall.Fsync(h.fd); err != nil {
			return fs.ToErrno(err)
		}
		return fs.ToErrno(n.pc.syncDir(h.fd))
	}
	// No handle of ours: open the node by its path.
	fd, err := syscall.Open(n.backingPath(), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fs.ToErrno(err)
	}
	defer syscall.Close(fd)
	if err := syscall.Fsync(fd); err != nil {
		return fs.ToErrno(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return fs.ToErrno(err)
	}
	if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		return fs.ToErrno(n.pc.syncDir(fd))
	}
	return fs.ToErrno(n.pc.syncFile(fd, dataOnly))
}

// Unlink removes a name. When the name is the last of an inode that has a
// durable state, the inode moves to limbo instead of being freed, so that a
// power cut can put it back with its inode number.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	p := filepath.Join(n.backingPath(), name)
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return fs.ToErrno(err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR && st.Nlink == 1 && n.pc.isDurable(st.Ino) {
		return fs.ToErrno(syscall.Rename(p, n.pc.limboPath(st.Ino)))
	}
	return n.LoopbackNode.Unlink(ctx, name)
}

// Rmdir removes an empty directory, moving it to limbo when it has a
// durable state.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	p := filepath.Join(n.backingPath(), name)
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return fs.ToErrno(err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR || !n.pc.isDurable(st.Ino) {
		return n.LoopbackNode.Rmdir(ctx, name)
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return fs.ToErrno(err)
	}
	if len(ents) != 0 {
		return syscall.ENOTEMPTY
	}
	return fs.ToErrno(syscall.Rename(p, n.pc.limboPath(st.Ino)))
}

// Rename renames; a durable inode the rename replaces is kept in limbo.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	const renameNoreplace, renameExchange = 1, 2
	if flags&(renameNoreplace|renameExchange) != 0 {
		return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
	}
	src := filepath.Join(n.backingPath(), name)
	dst := filepath.Join(np.backingPath(), newName)
	var sst, dst0 syscall.Stat_t
	if err := syscall.Lstat(src, &sst); err != nil {
		return fs.ToErrno(err)
	}
	if err := syscall.Lstat(dst, &dst0); err != nil || dst0.Ino == sst.Ino || !n.pc.isDurable(dst0.Ino) {
		return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
	}
	keep := n.pc.limboPath(dst0.Ino)
	if dst0.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		if sst.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			return syscall.EISDIR
		}
		if ents, err := os.ReadDir(dst); err != nil || len(ents) != 0 {
			return syscall.ENOTEMPTY
		}
		if err := syscall.Rename(dst, keep); err != nil {
			return fs.ToErrno(err)
		}
		if errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags); errno != 0 {
			syscall.Rename(keep, dst)
			return errno
		}
		return 0
	}
	if dst0.Nlink != 1 {
		return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
	}
	if err := syscall.Link(dst, keep); err != nil {
		return fs.ToErrno(err)
	}
	if errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags); errno != 0 {
		syscall.Unlink(keep)
		return errno
	}
	return 0
}

func (f *FS) limboPath(ino uint64) string {
	return filepath.Join(f.limbo, strconv.FormatUint(ino, 10))
}

func (f *FS) isDurable(ino uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.durable[ino]
	return ok
}

// syncFile records the content of the file open as fd as durable.
func (f *FS) syncFile(fd int, dataOnly bool) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	// The backing descriptor may be write-only: read through a new one.
	data, err := os.ReadFile("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return fmt.Errorf("power-cut fsync: read inode %d: %w", st.Ino, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.durable[st.Ino]
	if s == nil {
		s = &state{mode: st.Mode, uid: st.Uid, gid: st.Gid}
		f.durable[st.Ino] = s
	}
	s.data = data
	if !dataOnly {
		s.mode, s.uid, s.gid = st.Mode, st.Uid, st.Gid
	}
	f.stats.FileSyncs++
	return nil
}

// syncDir records the entries of the directory open as fd as durable. An
// entry's inode without a durable state yet gets the one a power cut would
// leave it: an empty file, an empty directory, the link's target.
func (f *FS) syncDir(fd int) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	dir := "/proc/self/fd/" + strconv.Itoa(fd)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("power-cut fsync: read directory inode %d: %w", st.Ino, err)
	}
	entries := map[string]uint64{}
	fresh := map[uint64]*state{}
	for _, e := range ents {
		var cst syscall.Stat_t
		p := filepath.Join(dir, e.Name())
		if err := syscall.Lstat(p, &cst); err != nil {
			return fmt.Errorf("power-cut fsync: %w", err)
		}
		entries[e.Name()] = cst.Ino
		s := &state{mode: cst.Mode, uid: cst.Uid, gid: cst.Gid}
		switch cst.Mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			s.entries = map[string]uint64{}
		case syscall.S_IFLNK:
			if s.target, err = os.Readlink(p); err != nil {
				return fmt.Errorf("power-cut fsync: %w", err)
			}
		}
		fresh[cst.Ino] = s
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for ino, s := range fresh {
		if f.durable[ino] == nil {
			f.durable[ino] = s
		}
	}
	s := f.durable[st.Ino]
	if s == nil {
		s = &state{}
		f.durable[st.Ino] = s
	}
	s.mode, s.uid, s.gid, s.entries = st.Mode, st.Uid, st.Gid, entries
	f.stats.DirSyncs++
	return nil
}
