package testengine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Dockerd is the engine binary Start runs, looked up in PATH.
const Dockerd = "dockerd"

// startTimeout bounds the wait for a started engine's first _ping answer;
// stopTimeout the wait for a SIGTERM to end it.
const (
	startTimeout = 60 * time.Second
	stopTimeout  = 30 * time.Second
)

// Options say how Start lays out an engine.
type Options struct {
	// DataRootSize, in bytes, when above zero puts the data root on a
	// tmpfs of that size (mounted by Start, unmounted by the teardown), so
	// that a test can fill the engine's disk. Zero keeps the data root a
	// directory of the machine's temporary file system.
	DataRootSize int64
}

// Engine is one private dockerd. Its methods may be called from the test's
// goroutine only.
type Engine struct {
	// Socket is the engine's unix socket (a path, not a unix:// address).
	// Each start makes the file anew: bind SocketDir to reach the engine
	// across restarts.
	Socket string
	// SocketDir is the directory holding Socket and nothing else.
	SocketDir string
	// StartTime is how long the last start took, from launching dockerd
	// until it answered _ping.
	StartTime time.Duration

	t      testing.TB
	dir    string
	tmpfs  bool
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd was waited for
	log    buffer
}

// Start starts a private engine and waits until it answers, or skips the
// test with one line saying why the machine cannot. The teardown is
// registered with t.Cleanup.
func Start(t testing.TB, o Options) *Engine {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("testengine: needs root to start dockerd in private namespaces")
	}
	if _, err := exec.LookPath(Dockerd); err != nil {
		t.Skipf("testengine: %s is not installed", Dockerd)
	}
	for _, tool := range []string{"mount", "containerd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("testengine: %s is not installed", tool)
		}
	}
	// A short directory of its own, not t.TempDir: a unix socket's path
	// (containerd's below the exec root among them) holds 107 bytes at
	// most, and a test's name may be long.
	dir, err := os.MkdirTemp("", "oac-testengine-")
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{t: t, dir: dir, SocketDir: filepath.Join(dir, "sock")}
	e.Socket = filepath.Join(e.SocketDir, "docker.sock")
	t.Cleanup(func() {
		if err := e.teardown(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("testengine: dockerd's log (last 4 KiB):\n%s", e.LogTail(4096))
		}
	})
	if err := e.prepare(o); err != nil {
		t.Fatalf("testengine: %v", err)
	}
	if err := e.launch(); err != nil {
		t.Fatalf("testengine: %v\ndockerd's log:\n%s", err, e.LogTail(8192))
	}
	return e
}

// prepare makes the engine's directories and its empty configuration.
func (e *Engine) prepare(o Options) error {
	if err := os.Chmod(e.dir, 0o711); err != nil {
		return err
	}
	data := filepath.Join(e.dir, "data")
	if err := os.Mkdir(data, 0o710); err != nil {
		return err
	}
	if o.DataRootSize > 0 {
		opts := fmt.Sprintf("mode=0710,size=%d", o.DataRootSize)
		if err := syscall.Mount("tmpfs", data, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
			return fmt.Errorf("a tmpfs of %d bytes for the data root: %w", o.DataRootSize, err)
		}
		e.tmpfs = true
	}
	for _, d := range []string{"sock", "exec", "etc-docker"} {
		if err := os.Mkdir(filepath.Join(e.dir, d), 0o755); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(e.dir, "daemon.json"), []byte("{}\n"), 0o644)
}

// script is run by /bin/sh as PID 1 of the engine's new namespaces: it
// makes the private mounts and execs dockerd.
func (e *Engine) script() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	d := quote(e.dir)
	w("set -eu")
	w("mount --make-rprivate /")
	w("mount -t proc -o nosuid,nodev,noexec proc /proc")
	// Copies of other tests' FUSE mounts held here would keep their
	// servers from ending.
	w("awk '$3 ~ /^fuse/ {print $2}' /proc/self/mounts | while read -r m; do umount -l \"$(printf '%%b' \"$m\")\" || true; done")
	w("mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /run")
	w("if [ -d /etc/docker ]; then mount --bind %s/etc-docker /etc/docker; fi", d)
	// Read-only cgroup hierarchies: the engine sees the controllers but
	// can make no cgroup on the machine.
	w("awk '$2 ~ /^\\/sys\\/fs\\/cgroup/ {print $2}' /proc/self/mounts | while read -r m; do mount -o remount,bind,ro \"$(printf '%%b' \"$m\")\"; done")
	w("if command -v ip >/dev/null; then ip link set lo up; fi")
	// The exec root and the pidfile are runtime state, like /run after a
	// reboot: what a killed engine left there names pids of its ended PID
	// namespace, which in the new one may be live processes (the pidfile
	// names pid 1, the new dockerd itself; the supervisor would wait for
	// a containerd that is not there).
	w("rm -rf %s/exec %s/docker.pid && mkdir -m 700 %s/exec", d, d, d)
	w("exec %s --config-file %s/daemon.json --data-root %s/data --exec-root %s/exec --pidfile %s/docker.pid -H unix://%s/sock/docker.sock "+
		"--storage-driver vfs --iptables=false --ip6tables=false --log-level warn", Dockerd, d, d, d, d, d)
	return b.String()
}

// quote single-quotes s for sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// launch starts dockerd and waits for its first _ping answer.
func (e *Engine) launch() error {
	if e.cmd != nil {
		return errors.New("the engine runs already")
	}
	cmd := exec.Command("/bin/sh", "-c", e.script())
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"}
	cmd.Stdout, cmd.Stderr = &e.log, &e.log
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC,
		Pdeathsig:  syscall.SIGKILL,
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", Dockerd, err)
	}
	e.cmd, e.exited = cmd, make(chan struct{})
	exited := e.exited
	go func() { cmd.Wait(); close(exited) }()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if Ping(ctx, e.Socket) == nil {
			e.StartTime = time.Since(start)
			return nil
		}
		select {
		case <-exited:
			e.cmd = nil
			return fmt.Errorf("%s ended before it answered (%v)", Dockerd, cmd.ProcessState)
		case <-ctx.Done():
			e.end(syscall.SIGKILL, 0)
			return fmt.Errorf("%s did not answer _ping within %s", Dockerd, startTimeout)
		case <-tick.C:
		}
	}
}

// Ping asks the engine at socket for GET /_ping and returns nil when it
// answered 200 OK.
func Ping(ctx context.Context, socket string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		},
		DisableKeepAlives: true,
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://engine/_ping", nil)
	if err != nil {
		return err
	}
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("_ping: %s: %s", res.Status, body)
	}
	return nil
}

// Running says whether dockerd runs (it may be paused).
func (e *Engine) Running() bool {
	if e.cmd == nil {
		return false
	}
	select {
	case <-e.exited:
		return false
	default:
		return true
	}
}

// PID is the machine's pid of dockerd, 0 when it does not run.
func (e *Engine) PID() int {
	if !e.Running() {
		return 0
	}
	return e.cmd.Process.Pid
}

// end sends sig to dockerd and waits for it to exit, sending SIGKILL
// after timeout (0: wait without one). dockerd is PID 1 of its PID
// namespace: once it exits, the kernel kills what else ran in it.
func (e *Engine) end(sig syscall.Signal, timeout time.Duration) error {
	if e.cmd == nil {
		return nil
	}
	defer func() { e.cmd = nil }()
	select {
	case <-e.exited:
		return nil
	default:
	}
	// A stopped process acts on SIGTERM only once continued.
	e.signalAll(syscall.SIGCONT)
	e.cmd.Process.Signal(sig)
	if timeout > 0 {
		select {
		case <-e.exited:
			return nil
		case <-time.After(timeout):
			e.cmd.Process.Kill()
			<-e.exited
			return fmt.Errorf("%s did not end within %s of %s: killed", Dockerd, timeout, sig)
		}
	}
	<-e.exited
	return nil
}

// Stop ends the engine as systemctl stop docker does (SIGTERM, and waits
// until it exited). Restart starts it again.
func (e *Engine) Stop() {
	e.t.Helper()
	if err := e.end(syscall.SIGTERM, stopTimeout); err != nil {
		e.t.Fatalf("testengine: stop: %v", err)
	}
}

// Kill ends the engine with SIGKILL, as a crash does: dockerd and its
// containerd, without cleaning up (its socket file stays). Restart
// starts it again.
func (e *Engine) Kill() {
	e.t.Helper()
	if e.cmd == nil {
		return
	}
	e.cmd.Process.Kill()
	<-e.exited
	e.cmd = nil
}

// Pause stops every process of the engine (SIGSTOP): its socket accepts
// connections, and no request is answered until Continue.
func (e *Engine) Pause() {
	e.t.Helper()
	if !e.Running() {
		e.t.Fatal("testengine: pause: the engine does not run")
	}
	e.signalAll(syscall.SIGSTOP)
}

// Continue resumes a paused engine (SIGCONT).
func (e *Engine) Continue() {
	e.t.Helper()
	if !e.Running() {
		e.t.Fatal("testengine: continue: the engine does not run")
	}
	e.signalAll(syscall.SIGCONT)
}

// Restart stops the engine when it runs and starts it again on the same
// data root, waiting until it answers.
func (e *Engine) Restart() {
	e.t.Helper()
	if err := e.end(syscall.SIGTERM, stopTimeout); err != nil {
		e.t.Fatalf("testengine: restart: %v", err)
	}
	if err := e.launch(); err != nil {
		e.t.Fatalf("testengine: restart: %v\ndockerd's log:\n%s", err, e.LogTail(8192))
	}
}

// procs are the machine's pids of the engine's processes: those in
// dockerd's PID namespace.
func (e *Engine) procs() []int {
	pid := e.PID()
	if pid == 0 {
		return nil
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err != nil {
		return nil
	}
	out := []int{pid}
	entries, _ := os.ReadDir("/proc")
	for _, ent := range entries {
		p, err := strconv.Atoi(ent.Name())
		if err != nil || p == pid {
			continue
		}
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", p)); err == nil && l == ns {
			out = append(out, p)
		}
	}
	return out
}

func (e *Engine) signalAll(sig syscall.Signal) {
	for _, p := range e.procs() {
		syscall.Kill(p, sig)
	}
}

// RSS is the resident memory of the engine's processes (dockerd and its
// containerd), in bytes.
func (e *Engine) RSS() int64 {
	var sum int64
	for _, p := range e.procs() {
		f, err := os.Open(fmt.Sprintf("/proc/%d/status", p))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				sum += kb << 10
			}
		}
		f.Close()
	}
	return sum
}

// LogTail is the last n bytes of what dockerd and its containerd logged
// (warnings and errors).
func (e *Engine) LogTail(n int) string {
	s := e.log.String()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// teardown kills the engine, unmounts the data root's tmpfs and removes
// the directory. It fails when anything below the directory is still
// mounted on the machine.
func (e *Engine) teardown() error {
	var errs []error
	if e.cmd != nil {
		e.cmd.Process.Kill()
		<-e.exited
		e.cmd = nil
	}
	if e.tmpfs {
		if err := syscall.Unmount(filepath.Join(e.dir, "data"), 0); err != nil {
			errs = append(errs, fmt.Errorf("testengine: unmount the data root: %w", err))
		} else {
			e.tmpfs = false
		}
	}
	if m := mountsBelow(e.dir); len(m) > 0 {
		errs = append(errs, fmt.Errorf("testengine: still mounted on the machine: %s", strings.Join(m, ", ")))
		return errors.Join(errs...)
	}
	if err := os.RemoveAll(e.dir); err != nil {
		errs = append(errs, fmt.Errorf("testengine: %w", err))
	}
	return errors.Join(errs...)
}

// mountsBelow lists this process's mount points at or below dir.
func mountsBelow(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}

// buffer is a bytes.Buffer safe for concurrent use (the log's copiers
// write, the test reads).
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
