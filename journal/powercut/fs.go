//go:build crashtest

package powercut

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// ErrUnavailable means this machine cannot mount the file system: the
// caller is not root or /dev/fuse is missing. Tests skip on it.
var ErrUnavailable = errors.New("power-cut file system unavailable")

// Available reports why FUSE cannot be mounted here, or nil when it can.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: mounting FUSE directly needs root", ErrUnavailable)
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return nil
}

// FS is a mounted power-cut file system.
type FS struct {
	backing    string // the backing directory (the "disk")
	mountpoint string
	limbo      string // holds inodes whose durable names were removed
	server     *fuse.Server

	mu      sync.Mutex
	durable map[uint64]*state // backing inode number -> its durable state
	rootIno uint64
	stats   Stats
}

// Stats counts what the file system saw since it was mounted.
type Stats struct {
	FileSyncs int // fsync and fdatasync of regular files
	DirSyncs  int // fsync of directories
	Cuts      int // power cuts
	Lost      int // paths whose state a power cut changed, summed over cuts
}

// state is what survives a power cut of one inode.
type state struct {
	mode    uint32 // st_mode, type bits included
	uid     uint32
	gid     uint32
	data    []byte            // regular file
	target  string            // symbolic link
	entries map[string]uint64 // directory: name -> inode
}

// Mount serves backing at mountpoint (both existing directories, on the
// same file system as backing's parent). Everything backing holds when
// mounted is durable. Unmount undoes it.
func Mount(backing, mountpoint string) (*FS, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	backing, err := filepath.Abs(backing)
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, fmt.Errorf("mount power-cut file system: stat %s: %w", backing, err)
	}
	f := &FS{
		backing:    backing,
		mountpoint: mountpoint,
		limbo:      filepath.Join(filepath.Dir(backing), "."+filepath.Base(backing)+".limbo"),
		rootIno:    st.Ino,
	}
	if err := os.Mkdir(f.limbo, 0o700); err != nil {
		return nil, fmt.Errorf("mount power-cut file system: limbo: %w", err)
	}
	if err := f.captureAll(); err != nil {
		os.RemoveAll(f.limbo)
		return nil, err
	}
	lroot := &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev)}
	lroot.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, pc: f}
	}
	rootNode := lroot.NewNode(lroot, nil, "", &st)
	lroot.RootNode = rootNode
	var zero time.Duration
	server, err := fs.Mount(mountpoint, rootNode, &fs.Options{
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{
			DirectMountStrict: true,
			AllowOther:        true,
			Options:           []string{"default_permissions"},
			FsName:            "powercut:" + backing,
			Name:              "powercut",
		},
	})
	if err != nil {
		os.RemoveAll(f.limbo)
		return nil, fmt.Errorf("mount power-cut file system at %s: %w", mountpoint, err)
	}
	f.server = server
	return f, nil
}

// Mountpoint is where the file system is mounted.
func (f *FS) Mountpoint() string { return f.mountpoint }

// Backing is the backing directory.
func (f *FS) Backing() string { return f.backing }

// Stats returns the counters so far.
func (f *FS) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// Unmount unmounts the file system and removes its limbo directory; the
// backing directory keeps its current (not reverted) state.
func (f *FS) Unmount() error {
	var err error
	for i := 0; i < 50; i++ {
		if err = f.server.Unmount(); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond) // a killed process's files are released asynchronously
	}
	if err != nil {
		return fmt.Errorf("unmount %s: %w", f.mountpoint, err)
	}
	f.server.Wait()
	return os.RemoveAll(f.limbo)
}

// Sync makes everything the backing directory holds now durable, as if
// every file and directory had been fsynced (use it after preparing a
// sandbox through the mount).
func (f *FS) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.captureAll()
}

// captureAll records the whole backing tree as durable and empties limbo.
// Called with f.mu held (or before the mount serves).
func (f *FS) captureAll() error {
	durable := map[uint64]*state{}
	var walk func(dir string) (uint64, error)
	walk = func(p string) (uint64, error) {
		st, err := lstatState(p)
		if err != nil {
			return 0, err
		}
		ino := st.ino
		if _, ok := durable[ino]; ok {
			return ino, nil // another name of a hard-linked file
		}
		durable[ino] = st.state
		if st.mode&syscall.S_IFMT == syscall.S_IFDIR {
			ents, err := os.ReadDir(p)
			if err != nil {
				return 0, fmt.Errorf("power-cut capture: %w", err)
			}
			for _, e := range ents {
				child, err := walk(filepath.Join(p, e.Name()))
				if err != nil {
					return 0, err
				}
				st.entries[e.Name()] = child
			}
		}
		return ino, nil
	}
	if _, err := walk(f.backing); err != nil {
		return err
	}
	if err := emptyDir(f.limbo); err != nil {
		return err
	}
	f.durable = durable
	return nil
}

type statState struct {
	*state
	ino   uint64
	nlink uint64
}

// lstatState reads the current state of the inode at p (content included).
func lstatState(p string) (statState, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return statState{}, fmt.Errorf("power-cut capture: lstat %s: %w", p, err)
	}
	s := &state{mode: st.Mode, uid: st.Uid, gid: st.Gid}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		data, err := os.ReadFile(p)
		if err != nil {
			return statState{}, fmt.Errorf("power-cut capture: %w", err)
		}
		s.data = data
	case syscall.S_IFDIR:
		s.entries = map[string]uint64{}
	case syscall.S_IFLNK:
		t, err := os.Readlink(p)
		if err != nil {
			return statState{}, fmt.Errorf("power-cut capture: %w", err)
		}
		s.target = t
	}
	return statState{state: s, ino: st.Ino, nlink: uint64(st.Nlink)}, nil
}

func emptyDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("power-cut limbo: %w", err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("power-cut limbo: %w", err)
		}
	}
	return nil
}
