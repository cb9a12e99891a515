//go:build crashtest

package testhost

import (
	"testing"

	"github.com/openagentcore/oac-node-install/journal/diskfull"
)

func init() {
	startDiskFull = func(t testing.TB, o Options) *Host {
		t.Helper()
		if err := diskfull.Available(); err != nil {
			t.Skipf("testhost: disk full: %v", err)
		}
		return start(t, o, (*Host).mountFullDisks)
	}
}

// mountFullDisks puts each copy on a disk-full file system (mountCopies).
func (h *Host) mountFullDisks() error {
	return h.mountCopies(func(backing, mp string) (disk, error) { return diskfull.Mount(backing, mp) })
}

// FullDisk is the disk-full file system holding the host's /etc (name
// "etc") or /var/lib ("var-lib"), for a test to Arm and give SpaceBack. The
// host must have been started with Options.DiskFull.
func (h *Host) FullDisk(name string) *diskfull.FS {
	h.t.Helper()
	for i, n := range []string{"etc", "var-lib"} {
		if n != name || i >= len(h.disks) {
			continue
		}
		if d, ok := h.disks[i].(*diskfull.FS); ok {
			return d
		}
	}
	h.t.Fatalf("testhost: no disk-full file system %q: start the host with Options.DiskFull", name)
	return nil
}
