package testhost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// DetachedPrefix starts the name of every detached host's directory, and
// so of its sub-cgroups (FindDetached).
const DetachedPrefix = "oac-testhost-detached-"

// detachedRecord is the file in a detached host's directory that says what
// to tear down. It is written before the sub-cgroups are made and again
// once the host has booted.
const detachedRecord = "detached.json"

// detachedKillTimeout bounds the wait for a detached host's processes to
// end after SIGKILL.
const detachedKillTimeout = 60 * time.Second

// Detached is a test host booted to outlive the process that booted it
// (the demo): the launcher runs in its own session with systemd's console
// in a file, and nothing ends it when the booting process exits. Its
// directory holds a record from which TeardownDetached, run by any later
// process, kills PID 1 and removes the sub-cgroups and the copies.
type Detached struct {
	// Dir is the host's directory: the copies of /etc and /var/lib, the
	// console and the record.
	Dir string `json:"dir"`
	// Cgroups are the sub-cgroups, one per hierarchy, as paths on the
	// machine.
	Cgroups []string `json:"cgroups"`
	// PID is the machine's pid of the namespace's PID 1 (systemd) and
	// PIDStart its start time in clock ticks after boot (/proc/PID/stat),
	// so that a reused pid is never taken for it; both 0 until booted.
	PID      int    `json:"pid,omitempty"`
	PIDStart uint64 `json:"pid_start,omitempty"`
	// Launcher and LauncherStart are unshare's, the parent of PID 1.
	Launcher      int    `json:"launcher,omitempty"`
	LauncherStart uint64 `json:"launcher_start,omitempty"`
	// DockerSocket is the engine socket bound into /run, "" for none.
	DockerSocket string `json:"docker_socket,omitempty"`
	// BootTime is how long it took from launching the namespace until
	// systemd reported the boot target reached.
	BootTime time.Duration `json:"boot_time_ns,omitempty"`
}

// CheckMachine says why this machine cannot boot a test host (not root,
// no systemd, unshare, nsenter, mount or cp), nil when it can.
func CheckMachine() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root to boot systemd in private namespaces")
	}
	if _, err := os.Stat(Systemd); err != nil {
		return fmt.Errorf("systemd is not installed (%s)", Systemd)
	}
	for _, tool := range []string{"unshare", "nsenter", "mount", "cp"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not installed", tool)
		}
	}
	return nil
}

// BootDetached boots a test host in a new directory DetachedPrefix* under
// parent and returns once systemd has finished booting. The host keeps
// running after this process exits, until TeardownDetached. When booting
// fails, what was made is removed again.
func BootDetached(parent string) (*Detached, error) {
	if err := CheckMachine(); err != nil {
		return nil, fmt.Errorf("testhost: %w", err)
	}
	dir, err := os.MkdirTemp(parent, DetachedPrefix)
	if err != nil {
		return nil, err
	}
	d := &Detached{Dir: dir}
	// The record names the sub-cgroups before they exist, so that a
	// booting process killed half-way leaves nothing TeardownDetached
	// cannot find. boot computes the same paths (same process, same
	// cgroups).
	hs, err := cgroupLayout()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	for _, hi := range hs {
		d.Cgroups = append(d.Cgroups, filepath.Join(hi.outside, hi.own, filepath.Base(dir)))
	}
	if err := d.save(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	console, err := os.OpenFile(d.ConsolePath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer console.Close()
	h := &Host{dir: dir, detach: func(c *exec.Cmd) {
		// A file, not a pipe: the launcher writes to it directly and
		// needs no copier in this process.
		c.Stdout, c.Stderr = console, console
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}}
	if err := h.boot(nil); err != nil {
		log, _ := os.ReadFile(d.ConsolePath())
		if terr := h.Teardown(); terr != nil {
			err = errors.Join(err, terr)
		}
		return nil, fmt.Errorf("testhost: %w\nconsole:\n%s", err, log)
	}
	d.PID, d.Launcher, d.DockerSocket, d.BootTime = h.pid, h.launcher.Process.Pid, h.DockerSocket, h.BootTime
	d.PIDStart, _ = procStart(d.PID)
	d.LauncherStart, _ = procStart(d.Launcher)
	if err := d.save(); err != nil {
		return nil, errors.Join(err, h.Teardown())
	}
	return d, nil
}

// FindDetached lists the detached hosts' directories under parent,
// booted or not.
func FindDetached(parent string) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(parent, DetachedPrefix+"*"))
	sort.Strings(dirs)
	return dirs, err
}

// OpenDetached reads the record of the detached host in dir.
func OpenDetached(dir string) (*Detached, error) {
	b, err := os.ReadFile(filepath.Join(dir, detachedRecord))
	if err != nil {
		return nil, err
	}
	var d Detached
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("testhost: %s: %w", filepath.Join(dir, detachedRecord), err)
	}
	if d.Dir != dir {
		return nil, fmt.Errorf("testhost: %s describes %s", filepath.Join(dir, detachedRecord), d.Dir)
	}
	for _, c := range d.Cgroups {
		// Only the host's own sub-cgroups: TeardownDetached kills what
		// they hold.
		if !strings.HasPrefix(c, "/sys/fs/cgroup/") || filepath.Base(c) != filepath.Base(dir) || filepath.Clean(c) != c {
			return nil, fmt.Errorf("testhost: %s names the cgroup %s, not one of the host's", filepath.Join(dir, detachedRecord), c)
		}
	}
	return &d, nil
}

func (d *Detached) save() error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	return safefile.AtomicWrite(filepath.Join(d.Dir, detachedRecord), append(b, '\n'), 0o600)
}

// ConsolePath is the file with systemd's console.
func (d *Detached) ConsolePath() string { return filepath.Join(d.Dir, "console.log") }

// Etc is the host's private copy of /etc, as seen from the machine.
func (d *Detached) Etc() string { return filepath.Join(d.Dir, "etc") }

// VarLib is the host's private copy of /var/lib, as seen from the machine.
func (d *Detached) VarLib() string { return filepath.Join(d.Dir, "var-lib") }

// Running reports whether the host's PID 1 is the process booted and
// still alive.
func (d *Detached) Running() bool {
	return d.PID > 0 && sameProcess(d.PID, d.PIDStart)
}

// Command returns a command that runs argv inside every namespace of the
// host, like Host.Command.
func (d *Detached) Command(ctx context.Context, argv ...string) *exec.Cmd {
	return (&Host{pid: d.PID}).Command(ctx, argv...)
}

// TeardownDetached ends the detached host in dir, booted, half-booted or
// already ended: SIGKILL to its PID 1, its launcher and every process in
// its sub-cgroups until none is left, then it removes the sub-cgroups and
// the directory. A directory that is gone is no error.
func TeardownDetached(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	d, err := OpenDetached(dir)
	if errors.Is(err, os.ErrNotExist) {
		// Killed before the record was written: nothing was made
		// besides the directory.
		d, err = &Detached{Dir: dir}, nil
	}
	if err != nil {
		return err
	}
	deadline := time.Now().Add(detachedKillTimeout)
	for {
		pids := d.processes()
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testhost: processes of %s still alive %s after SIGKILL: %v", dir, detachedKillTimeout, pids)
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var hs []hierarchy
	for _, c := range d.Cgroups {
		hs = append(hs, hierarchy{sub: c})
	}
	// The kernel may release a killed namespace's cgroups a little after
	// its processes are gone.
	for i := 0; ; i++ {
		err = removeSubCgroups(hs)
		if err == nil || !errors.Is(err, syscall.EBUSY) || i == 250 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("testhost: remove %s: %w", dir, err)
	}
	return nil
}

// processes lists the host's live processes, PID 1 first: PID 1 and the
// launcher when they are still the processes booted, and every process in
// the sub-cgroups. Zombies are dead: the machine's init may never reap an
// orphaned launcher.
func (d *Detached) processes() []int {
	var pids []int
	seen := map[int]bool{}
	add := func(pid int) {
		if pid > 0 && !seen[pid] {
			if _, ok := procStart(pid); ok {
				seen[pid] = true
				pids = append(pids, pid)
			}
		}
	}
	if d.PID > 0 && sameProcess(d.PID, d.PIDStart) {
		add(d.PID)
	}
	if d.Launcher > 0 && sameProcess(d.Launcher, d.LauncherStart) {
		add(d.Launcher)
	}
	for _, c := range d.Cgroups {
		filepath.WalkDir(c, func(p string, e os.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return nil
			}
			b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			if err != nil {
				return nil
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					add(pid)
				}
			}
			return nil
		})
	}
	return pids
}

// sameProcess reports whether pid is alive and started at start.
func sameProcess(pid int, start uint64) bool {
	got, ok := procStart(pid)
	return ok && got == start
}

// procStart returns a live (not zombie) process's start time in clock
// ticks after boot; false when there is no such process.
func procStart(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid … starttime is the 22nd field; comm may hold
	// spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	return start, err == nil
}

// ProcessStart returns a live (not zombie) process's start time in clock
// ticks after boot, to tell it from a later process given the same pid;
// false when there is no such process.
func ProcessStart(pid int) (uint64, bool) { return procStart(pid) }
