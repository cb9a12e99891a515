//go:build crashtest

package diskfull

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// ErrUnavailable means this machine cannot mount the file system: the
// caller is not root or /dev/fuse is missing. Tests skip on it.
var ErrUnavailable = errors.New("disk-full file system unavailable")

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

// FS is a mounted disk-full file system.
type FS struct {
	backing    string
	mountpoint string
	server     *fuse.Server

	mu     sync.Mutex
	under  string // the counted subtree, relative to the root; "" is all of it
	count  int    // space-needing operations below under since Arm
	failAt int    // 0: never fail
	failed int    // operations refused with ENOSPC since Arm
	armed  bool   // counting since Arm, until SpaceBack
	ops    []string
}

// Mount serves backing at mountpoint (both existing directories). Nothing
// is counted or refused until Arm.
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
		return nil, fmt.Errorf("mount disk-full file system: stat %s: %w", backing, err)
	}
	f := &FS{backing: backing, mountpoint: mountpoint}
	lroot := &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev)}
	lroot.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, df: f}
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
			FsName:            "diskfull:" + backing,
			Name:              "diskfull",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("mount disk-full file system at %s: %w", mountpoint, err)
	}
	f.server = server
	return f, nil
}

// Mountpoint is where the file system is mounted.
func (f *FS) Mountpoint() string { return f.mountpoint }

// Arm starts counting the space-needing operations below under (a path
// relative to the root, "" for all) from zero; from the n-th on, each fails
// with ENOSPC. n = 0 counts without failing.
func (f *FS) Arm(under string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.under, f.count, f.failAt, f.failed, f.ops, f.armed = filepath.Clean("/" + under)[1:], 0, n, 0, nil, true
}

// SpaceBack ends the shortage: every later operation passes, and counting
// stops (Count and Failed keep their last values).
func (f *FS) SpaceBack() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = false
}

// Count is the number of space-needing operations below the armed subtree
// since Arm.
func (f *FS) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.count
}

// Failed is the number of operations refused with ENOSPC since Arm.
func (f *FS) Failed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// Op returns the k-th (1-based) counted operation since Arm, as "op path",
// for messages; "" when there was none.
func (f *FS) Op(k int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if k < 1 || k > len(f.ops) {
		return ""
	}
	return f.ops[k-1]
}

// Unmount unmounts the file system; the backing directory keeps its state.
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
	return nil
}

// space is called before an operation that needs space at rel (relative
// to the root): ENOSPC when the disk is full there.
func (f *FS) space(op, rel string) syscall.Errno {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.armed {
		return 0
	}
	if f.under != "" && rel != f.under && !strings.HasPrefix(rel, f.under+"/") {
		return 0
	}
	f.count++
	if len(f.ops) < 100000 {
		f.ops = append(f.ops, op+" "+rel)
	}
	if f.failAt > 0 && f.count >= f.failAt {
		f.failed++
		return syscall.ENOSPC
	}
	return 0
}
