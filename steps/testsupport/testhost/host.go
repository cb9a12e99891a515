package testhost

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/testsupport/testengine"
)

// Systemd is the manager binary booted as PID 1.
const Systemd = "/lib/systemd/systemd"

// bootTimeout bounds the wait for the manager to finish booting.
const bootTimeout = 60 * time.Second

// Host is one booted test host. Its methods may be called from the test's
// goroutine only.
type Host struct {
	t        testing.TB
	dir      string
	hs       []hierarchy
	launcher *exec.Cmd
	exited   chan struct{} // closed once the launcher was waited for
	pid      int
	console  Buffer
	torn     bool

	// CopyTime is how long copying /etc and /var/lib took.
	CopyTime time.Duration
	// ManagerTime is how long it took from launching the namespace until
	// systemd answered on /run/systemd/private.
	ManagerTime time.Duration
	// BootTime is how long it took from launching the namespace until
	// systemd reported the boot target reached.
	BootTime time.Duration
	// DockerSocket is the engine socket bound into /run, "" for none:
	// the machine's, or with Options.OwnEngine the host's own engine's.
	DockerSocket string
	// Engine is the host's own Docker Engine (Options.OwnEngine), nil for
	// a host that shares the machine's. Its Stop, Kill, Pause and Restart
	// act on the engine the host sees at /run/docker.sock.
	Engine *testengine.Engine

	// detach, when set, adjusts the launcher so that the host outlives
	// this process (BootDetached).
	detach func(*exec.Cmd)
	// disks are the power-cut or disk-full file systems the copies live
	// on (StartPowerCut, Options.DiskFull), unmounted by Teardown.
	disks []disk
	// tmpfs is set when dir is a tmpfs of the host's own (InMemory).
	tmpfs bool
	// rootfs is the root file system the host boots (Options.Rootfs), ""
	// for the machine's; binds are the machine's directories bound into it.
	rootfs string
	binds  []string
}

// disk is a power-cut or disk-full file system (packages journal/powercut
// and journal/diskfull, in crashtest builds only) holding one of the copies.
type disk interface {
	Unmount() error
}

// Options say how StartWith lays out a test host.
type Options struct {
	// InMemory puts the host's directory (the copies of /etc and
	// /var/lib, and under PowerCut the power-cut file systems' backing
	// directories) on a tmpfs of its own, unmounted by Teardown. Copying
	// and removing the copies then costs a few milliseconds instead of
	// hundreds, and an fsync inside costs nothing: for tests of what a
	// killed process leaves (a SIGKILL does not lose the page cache) and
	// for the power-cut file system, which decides itself what an fsync
	// made durable. Tests that measure the installer's cost on a disk
	// leave it unset.
	InMemory bool
	// PowerCut puts each copy on a power-cut file system (StartPowerCut;
	// crashtest builds only, elsewhere the test skips).
	PowerCut bool
	// DiskFull puts each copy on a disk-full file system (FullDisk;
	// crashtest builds only, elsewhere the test skips). Not with PowerCut.
	DiskFull bool
	// Rootfs, when set, is a directory holding a whole root file system
	// (a Debian release, Rootfs) that the host boots instead of the
	// machine's userland: an overlay of it, with the host's writes in the
	// host's directory, becomes the root of the host's namespaces
	// (pivot_root), so that its own systemd, shadow-utils and D-Bus run.
	// The rootfs itself is never written. Not with PowerCut.
	Rootfs string
	// Binds are machine directories bound at the same path into a Rootfs
	// host (the test's binaries and temporary directories); a host of the
	// machine's userland sees the machine's root file system anyway.
	Binds []string
	// OwnEngine gives the host a Docker Engine of its own (package
	// testengine: a private dockerd, started before the host and ended
	// after it) instead of the machine's: its socket's directory is bound
	// at /run/oac-testengine and /run/docker.sock links to the socket in
	// it, so that the host reaches the engine again after a Restart
	// (dockerd makes its socket file anew). Several hosts can then be
	// nodes of one installation at once, and a test can stop one host's
	// engine. The engine is Host.Engine.
	OwnEngine bool
}

// Start boots a test host, or skips the test with one line saying why the
// machine cannot. Teardown and the check that the machine is unchanged are
// registered with t.Cleanup.
func Start(t testing.TB) *Host {
	t.Helper()
	return start(t, Options{}, nil)
}

// StartWith is Start with the layout o.
func StartWith(t testing.TB, o Options) *Host {
	t.Helper()
	if o.PowerCut && o.Rootfs != "" {
		t.Fatal("testhost: a power cut of a Rootfs host is not supported: its root is an overlay of the rootfs, not copies on power-cut file systems")
	}
	if o.DiskFull {
		if o.PowerCut || o.Rootfs != "" {
			t.Fatal("testhost: DiskFull goes with neither PowerCut nor Rootfs")
		}
		if startDiskFull == nil {
			t.Skip("testhost: disk full: needs a build with -tags crashtest")
		}
		return startDiskFull(t, o)
	}
	if !o.PowerCut {
		return start(t, o, nil)
	}
	if startPowerCut == nil {
		t.Skip("testhost: power cut: needs a build with -tags crashtest")
	}
	return startPowerCut(t, o)
}

// startPowerCut is StartPowerCut's start in crashtest builds, nil in others.
var startPowerCut func(testing.TB, Options) *Host

// startDiskFull is the start of a DiskFull host in crashtest builds, nil in
// others.
var startDiskFull func(testing.TB, Options) *Host

// start is Start; prepare, when set, runs on the copies before systemd
// boots.
func start(t testing.TB, o Options, prepare func(*Host) error) *Host {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("testhost: needs root to boot systemd in private namespaces")
	}
	if o.Rootfs != "" {
		if err := checkRootfs(o.Rootfs); err != nil {
			t.Fatalf("testhost: %v", err)
		}
	} else if _, err := os.Stat(Systemd); err != nil {
		t.Skipf("testhost: systemd is not installed (%s)", Systemd)
	}
	for _, tool := range []string{"unshare", "nsenter", "mount", "cp"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("testhost: %s is not installed", tool)
		}
	}
	before, err := TakeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		after, err := TakeSnapshot()
		if err != nil {
			t.Error(err)
			return
		}
		if d := before.Diff(after); len(d) > 0 {
			t.Errorf("testhost: the machine changed:\n%s", strings.Join(d, "\n"))
		}
	})
	h := &Host{t: t, rootfs: o.Rootfs, binds: o.Binds}
	if o.OwnEngine {
		// Started first, so that its teardown (t.Cleanup) runs after the
		// host's.
		h.Engine = testengine.Start(t, testengine.Options{})
	}
	h.dir, err = os.MkdirTemp("", "oac-testhost-")
	if err != nil {
		t.Fatal(err)
	}
	if o.InMemory {
		if err := syscall.Mount("tmpfs", h.dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0700,size=4g"); err != nil {
			os.Remove(h.dir)
			t.Fatalf("testhost: a tmpfs for the copies: %v", err)
		}
		h.tmpfs = true
	}
	t.Cleanup(func() {
		if err := h.Teardown(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("testhost: systemd's console:\n%s", h.console.String())
		}
	})
	if err := h.boot(prepare); err != nil {
		t.Fatalf("testhost: %v\nconsole:\n%s", err, h.console.String())
	}
	if h.rootfs != "" {
		t.Logf("testhost: %s booted; systemd answering in %s, %s reached in %s (cgroup %s)",
			h.rootfs, h.ManagerTime.Round(time.Millisecond), BootTarget, h.BootTime.Round(time.Millisecond), h.cgroupDirs())
		return h
	}
	t.Logf("testhost: copies of /etc and /var/lib in %s; systemd answering in %s, %s reached in %s (cgroups %s)",
		h.CopyTime.Round(time.Millisecond), h.ManagerTime.Round(time.Millisecond), BootTarget, h.BootTime.Round(time.Millisecond), h.cgroupDirs())
	return h
}

func (h *Host) cgroupDirs() string {
	var dirs []string
	for _, hi := range h.hs {
		dirs = append(dirs, hi.sub)
	}
	return strings.Join(dirs, ", ")
}

func (h *Host) boot(prepare func(*Host) error) error {
	if h.rootfs != "" {
		for _, d := range []string{"upper", "work", "root"} {
			if err := os.Mkdir(filepath.Join(h.dir, d), 0o755); err != nil {
				return err
			}
		}
		if err := h.rootfsDockerGroup(); err != nil {
			return err
		}
		return h.launch()
	}
	copyStart := time.Now()
	if err := copyTree("/etc", filepath.Join(h.dir, "etc"), nil); err != nil {
		return err
	}
	if err := copyTree("/var/lib", filepath.Join(h.dir, "var-lib"), bulkyVarLib); err != nil {
		return err
	}
	h.CopyTime = time.Since(copyStart)
	if prepare != nil {
		if err := prepare(h); err != nil {
			return err
		}
	}
	return h.launch()
}

// launch starts the namespace and its systemd on the copies in h.dir and
// waits until it finished booting.
func (h *Host) launch() error {
	h.DockerSocket = ""
	if h.Engine != nil {
		h.DockerSocket = h.Engine.Socket
	}
	for _, s := range []string{"/run/docker.sock", "/var/run/docker.sock"} {
		if h.Engine != nil {
			break
		}
		if fi, err := os.Stat(s); err == nil && fi.Mode()&os.ModeSocket != 0 {
			h.DockerSocket = s
			break
		}
	}
	hs, err := cgroupLayout()
	if err != nil {
		return err
	}
	procs, err := makeSubCgroups(hs, filepath.Base(h.dir))
	h.hs = hs
	if err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(h.dir, "run-systemd")); err != nil {
		return err
	}
	if err := writeRunSystemd(h.dir, h.rootfs); err != nil {
		return err
	}
	script := filepath.Join(h.dir, "init.sh")
	eng := engineSocket{machine: h.DockerSocket}
	if h.Engine != nil {
		eng = engineSocket{dir: h.Engine.SocketDir}
	}
	text := initScript(h.dir, hs, eng)
	if h.rootfs != "" {
		text = rootfsInitScript(h.dir, h.rootfs, hs, eng, h.binds)
	}
	if err := os.WriteFile(script, []byte(text), 0o700); err != nil {
		return err
	}
	// The launcher joins the sub-cgroups before unshare makes them the
	// root of the new cgroup namespace. --kill-child ends PID 1 (and so
	// the namespace) if unshare dies first.
	args := append([]string{"-c", `init=$1; shift; for f; do echo $$ >"$f"; done; exec unshare --pid --fork --kill-child=SIGKILL --mount --uts --ipc --cgroup --mount-proc --propagation private "$init"`, "sh", script}, procs...)
	h.launcher = exec.Command("/bin/sh", args...)
	h.launcher.Stdout, h.launcher.Stderr = &h.console, &h.console
	h.launcher.Dir = "/"
	h.launcher.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}
	h.launcher.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if h.detach != nil {
		h.detach(h.launcher)
	}
	start := time.Now()
	if err := h.launcher.Start(); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	h.exited = make(chan struct{})
	go func() { h.launcher.Wait(); close(h.exited) }()
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	if err := h.waitManager(ctx); err != nil {
		return err
	}
	h.ManagerTime = time.Since(start)
	// --wait returns once the boot job finished: running, or degraded when
	// a unit failed; any other state is an error.
	r, err := h.Exec(ctx, "systemctl", "is-system-running", "--wait")
	if err != nil {
		return err
	}
	state := strings.TrimSpace(string(r.Stdout))
	if state != "running" && state != "degraded" {
		return fmt.Errorf("systemd did not finish booting: is-system-running says %q (exit status %d): %s", state, r.Status, r.Stderr)
	}
	h.BootTime = time.Since(start)
	return nil
}

// waitManager finds the namespace's PID 1 and waits for its private bus
// socket.
func (h *Host) waitManager(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if h.pid == 0 {
			h.pid = childOf(h.launcher.Process.Pid)
		}
		if h.pid != 0 {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d/root/run/systemd/private", h.pid)); err == nil {
				return nil
			}
		}
		select {
		case <-h.exited:
			return errors.New("the namespace ended before systemd was ready")
		case <-ctx.Done():
			return fmt.Errorf("systemd did not open /run/systemd/private within %s", bootTimeout)
		case <-tick.C:
		}
	}
}

// childOf returns the pid of a child of parent, 0 when it has none yet.
func childOf(parent int) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(parent) {
			return pid
		}
	}
	return 0
}

// bulkyVarLib are the package managers' and other services' state in
// /var/lib that nothing run in a test host reads and that would make the
// copy take most of the boot time (about 100 MB on a development machine):
// the test host gets empty directories of the same mode and owner instead.
var bulkyVarLib = map[string]bool{
	"apt": true, "dpkg": true, "postgresql": true, "mysql": true, "docker": true,
	"containerd": true, "snapd": true, "flatpak": true, "PackageKit": true, "swcatalog": true,
}

// copyTree copies src to dst with cp -a, except the top-level entries named
// in empty, which become empty directories like the originals.
func copyTree(src, dst string, empty map[string]bool) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if err := os.Mkdir(dst, fi.Mode().Perm()); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	args := []string{"-a"}
	for _, e := range entries {
		p := filepath.Join(src, e.Name())
		if !empty[e.Name()] || !e.IsDir() {
			args = append(args, p)
			continue
		}
		if err := emptyLike(p, filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	if len(args) == 1 {
		return nil
	}
	if out, err := exec.Command("cp", append(args, dst+"/")...).CombinedOutput(); err != nil {
		return fmt.Errorf("copy %s: %v: %s", src, err, out)
	}
	return nil
}

// emptyLike makes dst an empty directory with src's mode and owner.
func emptyLike(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.Mkdir(dst, fi.Mode().Perm()); err != nil {
		return err
	}
	st := fi.Sys().(*syscall.Stat_t)
	if err := os.Chown(dst, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	return os.Chmod(dst, fi.Mode().Perm()|fi.Mode()&(os.ModeSetgid|os.ModeSetuid|os.ModeSticky))
}

// PID is the machine's pid of the namespace's PID 1 (systemd).
func (h *Host) PID() int { return h.pid }

// Etc is the host's private copy of /etc, as seen from the machine (of a
// Rootfs host: through its PID 1's root, while it runs).
func (h *Host) Etc() string {
	if h.rootfs != "" {
		return fmt.Sprintf("/proc/%d/root/etc", h.pid)
	}
	return filepath.Join(h.dir, "etc")
}

// VarLib is the host's private copy of /var/lib, as seen from the machine.
func (h *Host) VarLib() string {
	if h.rootfs != "" {
		return fmt.Sprintf("/proc/%d/root/var/lib", h.pid)
	}
	return filepath.Join(h.dir, "var-lib")
}

// Copies are the directories that hold the host's /etc and /var/lib, for a
// test that reads the whole tree from the machine: Etc and VarLib, or for
// a host on power-cut file systems their backing directories, which hold
// the same names, bytes, modes and owners and are read without a trip
// through FUSE for every file.
func (h *Host) Copies() (etc, varLib string) {
	if len(h.disks) > 0 {
		return h.Etc() + ".disk", h.VarLib() + ".disk"
	}
	return h.Etc(), h.VarLib()
}

// Console is what systemd printed so far.
func (h *Host) Console() string { return h.console.String() }

// Command returns a command that runs argv inside every namespace of the
// host (nsenter -t PID -a), from /, with the caller's environment unless the
// caller sets Env.
func (h *Host) Command(ctx context.Context, argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"-t", strconv.Itoa(h.pid), "-a", "--"}, argv...)...)
	cmd.Dir = "/"
	return cmd
}

// Result is what a command inside printed and its exit status.
type Result struct {
	Stdout, Stderr []byte
	Status         int
}

// Exec runs argv inside the host. A non-zero exit status is in Result, not
// an error; the error says that the command could not be run at all.
func (h *Host) Exec(ctx context.Context, argv ...string) (Result, error) {
	var r Result
	var out, errOut bytes.Buffer
	cmd := h.Command(ctx, argv...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	r.Stdout, r.Stderr = out.Bytes(), errOut.Bytes()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() >= 0 {
		r.Status = exit.ExitCode()
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("run %q in the test host: %w", argv, err)
	}
	return r, nil
}

// Teardown kills the namespace's PID 1 with SIGKILL, which ends every
// process in it, then removes the sub-cgroups and the copies. It is
// registered with t.Cleanup by Start and may be called earlier; later calls
// do nothing.
func (h *Host) Teardown() error {
	if h.torn {
		return nil
	}
	h.torn = true
	errs := []error{h.checkNoV1(), h.stop()}
	for _, fs := range h.disks {
		if err := fs.Unmount(); err != nil {
			errs = append(errs, err)
		}
	}
	if h.tmpfs {
		if err := syscall.Unmount(h.dir, syscall.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmount the tmpfs %s: %w", h.dir, err))
		}
		h.tmpfs = false
	}
	if h.dir != "" {
		// Every mount of the host lived in its mount namespace, which
		// ended with PID 1: one still on the machine below its directory
		// is a leak, and removing the directory would remove through it.
		if inside, err := mountsBelow(h.dir); err != nil || len(inside) > 0 {
			errs = append(errs, fmt.Errorf("testhost: mounts remain on the machine below %s (%s, %v): not removing it", h.dir, strings.Join(inside, ", "), err))
		} else if err := os.RemoveAll(h.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", h.dir, err))
		}
	}
	return errors.Join(errs...)
}

// stop kills the namespace's PID 1, which ends every process in it, and
// removes the sub-cgroups; the copies stay.
func (h *Host) stop() error {
	var errs []error
	if h.exited != nil {
		if h.pid != 0 {
			syscall.Kill(h.pid, syscall.SIGKILL)
		}
		// unshare waits for its child; killing it too (--kill-child)
		// covers a PID 1 that was never found.
		h.launcher.Process.Kill()
		<-h.exited
	}
	// A killed namespace's processes are gone once unshare has waited for
	// PID 1, but the kernel may release their cgroups a little later.
	var err error
	for i := 0; i < 100; i++ {
		if err = removeSubCgroups(h.hs); err == nil || !errors.Is(err, syscall.EBUSY) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		errs = append(errs, err)
	}
	h.exited, h.pid = nil, 0
	return errors.Join(errs...)
}

// checkNoV1 fails when a cgroup v1 hierarchy is mounted inside the running
// host: its systemd would make its units' cgroups there, at the
// machine's hierarchy's root, which the cgroup namespace does not confine
// and Teardown does not remove. The host mounts only cgroup2 (cgroupLayout).
func (h *Host) checkNoV1() error {
	if h.pid == 0 || h.exited == nil {
		return nil
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", h.pid))
	if err != nil {
		return nil // PID 1 is gone already: nothing mounted inside any more
	}
	var v1 []string
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if f, g := strings.Fields(pre), strings.Fields(post); ok && len(f) > 4 && len(g) > 0 && g[0] == "cgroup" {
			v1 = append(v1, f[4])
		}
	}
	if len(v1) > 0 {
		return fmt.Errorf("testhost: cgroup v1 hierarchies are mounted inside the host (%s): its systemd may have left cgroups at the machine's hierarchies' roots", strings.Join(v1, ", "))
	}
	return nil
}
