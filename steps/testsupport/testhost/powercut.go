//go:build crashtest

package testhost

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/powercut"
)

// StartPowerCut boots a test host whose copies of /etc and /var/lib each
// live on a power-cut file system (package journal/powercut): everything
// the copy holds at boot is durable; from then on only what a process
// inside makes durable (fsync of a file, of the directory holding a name)
// survives PowerCut. It skips the test, with one line saying why, where
// Start would or FUSE cannot be mounted. Crashtest builds only.
func StartPowerCut(t testing.TB) *Host {
	t.Helper()
	return StartWith(t, Options{PowerCut: true})
}

func init() {
	startPowerCut = func(t testing.TB, o Options) *Host {
		t.Helper()
		if err := powercut.Available(); err != nil {
			t.Skipf("testhost: power cut: %v", err)
		}
		return start(t, o, (*Host).mountDisks)
	}
}

// mountDisks puts each copy on a power-cut file system (mountCopies).
func (h *Host) mountDisks() error {
	return h.mountCopies(func(backing, mp string) (disk, error) { return powercut.Mount(backing, mp) })
}

// mountCopies moves each copy to <name>.disk and mounts a file system of it
// (mount) where the copy was, so the init script binds it as before.
func (h *Host) mountCopies(mount func(backing, mountpoint string) (disk, error)) error {
	for _, name := range []string{"etc", "var-lib"} {
		mp := filepath.Join(h.dir, name)
		backing := mp + ".disk"
		if err := os.Rename(mp, backing); err != nil {
			return err
		}
		if err := os.Mkdir(mp, 0o755); err != nil {
			return err
		}
		d, err := mount(backing, mp)
		if err != nil {
			return fmt.Errorf("copy of /%s: %w", strings.ReplaceAll(name, "-", "/"), err)
		}
		h.disks = append(h.disks, d)
	}
	return nil
}

// PowerCut cuts the host's power and boots it again: it kills PID 1 (every
// process inside dies at once, as in a power loss), reverts the copies of
// /etc and /var/lib to what was made durable, boots a new systemd on them,
// and starts the units enabled in the copy of /etc (links in its
// systemd/system/*.wants and *.requires directories that the machine's
// /etc does not have), as a machine's boot starts what its targets want.
// It returns the paths the cut lost, relative to the host's /etc
// ("etc/...") or /var/lib ("var-lib/..."). The host must have been started
// by StartPowerCut.
func (h *Host) PowerCut() ([]string, error) {
	if len(h.disks) != 2 {
		return nil, errors.New("testhost: power cut of a host not started by StartPowerCut")
	}
	if _, ok := h.disks[0].(*powercut.FS); !ok {
		return nil, errors.New("testhost: power cut of a host not started by StartPowerCut")
	}
	if err := h.stop(); err != nil {
		return nil, err
	}
	var lost []string
	for i, name := range []string{"etc", "var-lib"} {
		pc, ok := h.disks[i].(*powercut.FS)
		if !ok {
			return nil, errors.New("testhost: power cut of a host not started by StartPowerCut")
		}
		l, err := pc.PowerCut()
		if err != nil {
			return nil, err
		}
		for _, p := range l {
			lost = append(lost, filepath.Join(name, p))
		}
	}
	sort.Strings(lost)
	if err := h.launch(); err != nil {
		// Seen once in a few hundred boots on a loaded machine:
		// systemctl found no bus right after the manager's socket
		// appeared. The boot is tried once more, on the same copies,
		// and the first failure logged.
		h.t.Logf("testhost: boot after the power cut failed, booting again: %v\nconsole:\n%s", err, h.console.String())
		if err := h.stop(); err != nil {
			return lost, err
		}
		if err := h.launch(); err != nil {
			return lost, fmt.Errorf("testhost: boot after the power cut: %w\nconsole:\n%s", err, h.console.String())
		}
	}
	units := h.enabledInside()
	if len(units) == 0 {
		return lost, nil
	}
	// The boot does not wait for them, nor fail when one fails to start,
	// like a machine's: whoever needs one running checks it.
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	r, err := h.Exec(ctx, append([]string{"systemctl", "start", "--no-block"}, units...)...)
	if err != nil {
		return lost, err
	}
	if r.Status != 0 {
		h.t.Logf("testhost: start %v after the power cut: exit %d: %s", units, r.Status, r.Stderr)
	}
	return lost, nil
}

// enabledInside lists the units a boot starts inside beyond the machine's:
// link names in the copy's systemd/system/*.wants and *.requires that the
// machine's /etc/systemd/system does not have.
func (h *Host) enabledInside() []string {
	base := filepath.Join(h.Etc(), "systemd", "system")
	seen := map[string]bool{}
	var units []string
	dirs, _ := os.ReadDir(base)
	for _, d := range dirs {
		if !d.IsDir() || !(strings.HasSuffix(d.Name(), ".wants") || strings.HasSuffix(d.Name(), ".requires")) {
			continue
		}
		entries, _ := os.ReadDir(filepath.Join(base, d.Name()))
		for _, e := range entries {
			if e.Type()&fs.ModeSymlink == 0 || seen[e.Name()] {
				continue
			}
			if _, err := os.Lstat(filepath.Join("/etc/systemd/system", d.Name(), e.Name())); err == nil {
				continue
			}
			seen[e.Name()] = true
			units = append(units, e.Name())
		}
	}
	sort.Strings(units)
	return units
}
