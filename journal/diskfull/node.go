//go:build crashtest

package diskfull

import (
	"context"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is a loopback node that asks its FS for space first.
type node struct {
	fs.LoopbackNode
	df *FS
}

var (
	_ fs.NodeOpener    = (*node)(nil)
	_ fs.NodeCreater   = (*node)(nil)
	_ fs.NodeMkdirer   = (*node)(nil)
	_ fs.NodeMknoder   = (*node)(nil)
	_ fs.NodeSymlinker = (*node)(nil)
	_ fs.NodeLinker    = (*node)(nil)
	_ fs.NodeRenamer   = (*node)(nil)
	_ fs.NodeSetattrer = (*node)(nil)
	_ fs.NodeFsyncer   = (*node)(nil)
	_ fs.FileWriter    = (*file)(nil)
	_ fs.FileFsyncer   = (*file)(nil)
)

// rel is the node's path relative to the root.
func (n *node) rel() string { return n.Path(n.RootData.RootNode.EmbeddedInode()) }

func (n *node) child(name string) string { return filepath.Join(n.rel(), name) }

// loopFile is the part of *fs.LoopbackFile the kernel may call (no
// passthrough: writes must reach the server to be counted).
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
	fs.FileGetlker
	fs.FileSetlker
	fs.FileSetlkwer
}

// file is an open regular file of the node at rel.
type file struct {
	loopFile
	df  *FS
	rel string
}

func (n *node) wrap(fh fs.FileHandle, rel string) fs.FileHandle {
	lf, ok := fh.(loopFile)
	if !ok {
		return fh
	}
	return &file{loopFile: lf, df: n.df, rel: rel}
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if errno := f.df.space("write", f.rel); errno != 0 {
		return 0, errno
	}
	return f.loopFile.Write(ctx, data, off)
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if errno := f.df.space("fsync", f.rel); errno != 0 {
		return errno
	}
	return f.loopFile.Fsync(ctx, flags)
}

func (f *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if errno := f.df.space("fallocate", f.rel); errno != 0 {
		return errno
	}
	return f.loopFile.Allocate(ctx, off, size, mode)
}

// Open serves O_DIRECT opens with a buffered backing file (the server's
// buffers are not aligned for it).
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags&^syscall.O_DIRECT)
	if errno != 0 {
		return nil, 0, errno
	}
	return n.wrap(fh, n.rel()), fuseFlags &^ fuse.FOPEN_PASSTHROUGH, 0
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if errno := n.df.space("create", n.child(name)); errno != 0 {
		return nil, nil, 0, errno
	}
	in, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags&^syscall.O_DIRECT, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return in, n.wrap(fh, n.child(name)), fuseFlags &^ fuse.FOPEN_PASSTHROUGH, 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.df.space("mkdir", n.child(name)); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.df.space("mknod", n.child(name)); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.df.space("symlink", n.child(name)); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Symlink(ctx, target, name, out)
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.df.space("link", n.child(name)); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Link(ctx, target, name, out)
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if np, ok := newParent.(*node); ok {
		if errno := n.df.space("rename", np.child(newName)); errno != 0 {
			return errno
		}
	}
	return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
}

// Setattr needs space only to grow a file.
func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(n.RootData.Path, n.rel()), &st); err == nil && int64(size) > st.Size {
			if errno := n.df.space("truncate", n.rel()); errno != 0 {
				return errno
			}
		}
	}
	if f, ok := fh.(*file); ok {
		fh = f.loopFile
	}
	return n.LoopbackNode.Setattr(ctx, fh, in, out)
}

// Fsync of a directory (the kernel's FSYNCDIR) or of a file without a
// handle of ours.
func (n *node) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	if f, ok := fh.(*file); ok {
		return f.Fsync(ctx, flags)
	}
	if errno := n.df.space("fsync", n.rel()); errno != 0 {
		return errno
	}
	fd, err := syscall.Open(filepath.Join(n.RootData.Path, n.rel()), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fs.ToErrno(err)
	}
	defer syscall.Close(fd)
	return fs.ToErrno(syscall.Fsync(fd))
}

// dirStream is the loopback directory stream the kernel may call.
type dirStream interface {
	fs.FileReaddirenter
	fs.FileSeekdirer
	fs.FileReleasedirer
	fs.FileFsyncdirer
}

// dirHandle is an open directory whose fsync needs space.
type dirHandle struct {
	dirStream
	df  *FS
	rel string
}

func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	if errno := d.df.space("fsync", d.rel); errno != 0 {
		return errno
	}
	return d.dirStream.Fsyncdir(ctx, flags)
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	ds, errno := fs.NewLoopbackDirStream(filepath.Join(n.RootData.Path, n.rel()))
	if errno != 0 {
		return nil, 0, errno
	}
	stream, ok := ds.(dirStream)
	if !ok {
		ds.Close()
		return nil, 0, syscall.ENOTSUP
	}
	return &dirHandle{dirStream: stream, df: n.df, rel: n.rel()}, 0, 0
}
