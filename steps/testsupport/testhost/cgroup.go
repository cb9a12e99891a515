package testhost

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// hierarchy is one cgroup hierarchy of the machine that systemd needs:
// where it is mounted outside, how the init script mounts it inside.
type hierarchy struct {
	outside string // mount point on the machine
	own     string // this process's cgroup in it
	inside  string // mount point inside, relative to /sys/fs/cgroup ("" for the top)
	mount   string // mount arguments inside: "-t cgroup2 cgroup2" or "-t cgroup -o none,name=systemd cgroup"
	sub     string // the sub-cgroup made for one host (outside path)
}

// cgroupLayout finds the machine's cgroup2 hierarchy: at /sys/fs/cgroup
// (unified), or at /sys/fs/cgroup/unified (the hybrid layout). A host
// joins a sub-cgroup of it only and mounts it at its own /sys/fs/cgroup, so
// that its systemd, of any version from 247 on, runs in the unified layout
// and never sees the machine's v1 hierarchies: a systemd booted in the
// hybrid layout mounts the v1 controllers itself and makes its units'
// cgroups there at the hierarchy's root, where the namespace does not
// confine them and nothing removes them (and systemd >= 258 does not boot
// in that layout at all).
func cgroupLayout() ([]hierarchy, error) {
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	for _, p := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if isCgroup2(p) {
			return []hierarchy{{outside: p, own: own[""], mount: "-t cgroup2 cgroup2"}}, nil
		}
	}
	return nil, errors.New("no cgroup2 hierarchy on this machine (neither /sys/fs/cgroup nor /sys/fs/cgroup/unified): a test host's systemd runs in the unified layout only; mount cgroup2 at /sys/fs/cgroup/unified")
}

func isFS(path string, magic int64) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && int64(st.Type) == magic
}

func isCgroup2(path string) bool { return isFS(path, unix.CGROUP2_SUPER_MAGIC) }

// ownCgroups reads /proc/self/cgroup: controller list ("" for cgroup2,
// "name=systemd", …) to path.
func ownCgroups() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		parts := strings.SplitN(s.Text(), ":", 3)
		if len(parts) == 3 {
			m[parts[1]] = parts[2]
		}
	}
	return m, s.Err()
}

// makeSubCgroups creates the sub-cgroup name under this process's cgroup in
// each hierarchy and returns the cgroup.procs files the launcher joins.
func makeSubCgroups(hs []hierarchy, name string) ([]string, error) {
	var procs []string
	for i := range hs {
		dir := filepath.Join(hs[i].outside, hs[i].own, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return procs, fmt.Errorf("make cgroup %s: %w", dir, err)
		}
		hs[i].sub = dir
		procs = append(procs, filepath.Join(dir, "cgroup.procs"))
	}
	return procs, nil
}

// removeSubCgroups removes every sub-cgroup, deepest first. The processes
// in them must be gone.
func removeSubCgroups(hs []hierarchy) error {
	var errs []error
	for _, h := range hs {
		if h.sub == "" {
			continue
		}
		var dirs []string
		filepath.WalkDir(h.sub, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.Reverse(dirs)
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}
