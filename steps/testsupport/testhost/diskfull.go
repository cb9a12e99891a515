//go:build crashtest

package testhost

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// mountFullDisks moves each copy to <name>.disk and mounts a disk-full file
// system of it where the copy was, so the init script binds it as before.
func (h *Host) mountFullDisks() error {
	for _, name := range []string{"etc", "var-lib"} {
		mp := filepath.Join(h.dir, name)
		backing := mp + ".disk"
		if err := os.Rename(mp, backing); err != nil {
			return err
		}
		if err := os.Mkdir(mp, 0o755); err != nil {
			return err
		}
		d, err := diskfull.Mount(backing, mp)
		if err != nil {
			return fmt.Errorf("copy of /%s: %w", strings.ReplaceAll(name, "-", "/"), err)
		}
		h.disks = append(h.disks, d)
	}
	return nil
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
