//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
)

// The demo's end-to-end test (make e2e, -tags e2e): the real oac-demo as
// root, up and down in a state directory of the test's own; up interrupted
// with Ctrl-C (SIGINT to its process group, as a terminal sends it) at
// several stages, or killed, and then down; and one full up, a second up,
// and down.
// After every down the machine is as before and nothing up started is
// left: processes, cgroups, the state directory, the Docker network.

// demoTimeout bounds one oac-demo run.
const demoTimeout = 5 * time.Minute

func buildDemo(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	root, _ := filepath.Abs("../..")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin+"/",
		"./cmd/oac-demo", "./cmd/oac-node-install", "./cmd/oac-devcore", "./cmd/oac-node-dev")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// demoRun is one oac-demo process.
type demoRun struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
	lines  chan string
	copied chan struct{}
}

// startDemo starts `oac-demo sub --state state --bin bin` in a process
// group of its own, its stdout and stderr merged and read line by line.
func startDemo(t *testing.T, bin, state, sub string) *demoRun {
	t.Helper()
	r := &demoRun{lines: make(chan string, 1024), copied: make(chan struct{})}
	r.cmd = exec.Command(filepath.Join(bin, "oac-demo"), sub, "--state", state, "--bin", bin)
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r.cmd.Env = append(os.Environ(), "NO_COLOR=1")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.cmd.Stdout, r.cmd.Stderr = pw, pw
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	go func() {
		defer close(r.copied)
		defer close(r.lines)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			r.mu.Lock()
			r.out.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
			select {
			case r.lines <- sc.Text():
			default:
			}
		}
		io.Copy(io.Discard, pr)
	}()
	return r
}

func (r *demoRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// signalAt sends sig when a line matches at: SIGINT to the run's process
// group, as a terminal's Ctrl-C; SIGKILL to oac-demo alone. False when the
// run ended first.
func (r *demoRun) signalAt(at *regexp.Regexp, sig syscall.Signal) bool {
	for l := range r.lines {
		if at.MatchString(l) {
			if sig == syscall.SIGINT {
				syscall.Kill(-r.cmd.Process.Pid, sig)
			} else {
				r.cmd.Process.Signal(sig)
			}
			return true
		}
	}
	return false
}

// wait waits for the run and returns its exit status.
func (r *demoRun) wait(t *testing.T) int {
	t.Helper()
	go func() {
		for range r.lines {
		}
	}()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(demoTimeout):
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-done
		t.Fatalf("oac-demo %s did not end within %s:\n%s", r.cmd.Args[1], demoTimeout, r.output())
	}
	// A process oac-demo left running (after SIGKILL: the installer in
	// the test host) may hold the output open until it ends.
	select {
	case <-r.copied:
	case <-time.After(demoTimeout):
		t.Logf("the output of oac-demo %s is still open after %s", r.cmd.Args[1], demoTimeout)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// leftovers is what up recorded: checked to be gone after down.
type leftovers struct {
	devcorePID   int
	devcoreStart uint64
	hosts        []*testhost.Detached
	network      string
}

func readLeftovers(t *testing.T, stateDir string) leftovers {
	t.Helper()
	var l leftovers
	if b, err := os.ReadFile(filepath.Join(stateDir, stateFile)); err == nil {
		var st state
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		if st.Devcore != nil {
			l.devcorePID, l.devcoreStart = st.Devcore.PID, st.Devcore.Start
			if st.Devcore.InstallationID != "" {
				l.network = "oac-node-" + st.Devcore.InstallationID
			}
		}
	}
	dirs, _ := testhost.FindDetached(stateDir)
	for _, d := range dirs {
		if h, err := testhost.OpenDetached(d); err == nil {
			l.hosts = append(l.hosts, h)
		}
	}
	return l
}

// down runs oac-demo down and checks that nothing up started is left and
// the machine is as before.
func down(t *testing.T, bin, stateDir string, before testhost.Snapshot) string {
	t.Helper()
	l := readLeftovers(t, stateDir)
	r := startDemo(t, bin, stateDir, "down")
	if code := r.wait(t); code != 0 {
		t.Fatalf("down exited %d:\n%s", code, r.output())
	}
	if _, err := os.Lstat(stateDir); !os.IsNotExist(err) {
		t.Errorf("the state directory %s remains after down (%v)", stateDir, err)
	}
	if l.devcorePID > 0 {
		if start, ok := testhost.ProcessStart(l.devcorePID); ok && start == l.devcoreStart {
			t.Errorf("oac-devcore (pid %d) still runs after down", l.devcorePID)
		}
	}
	for _, h := range l.hosts {
		if h.Running() {
			t.Errorf("the test host's PID 1 (pid %d) still runs after down", h.PID)
		}
		for _, c := range h.Cgroups {
			if _, err := os.Stat(c); !os.IsNotExist(err) {
				t.Errorf("the cgroup %s remains after down (%v)", c, err)
			}
		}
	}
	if l.network != "" {
		if out, err := exec.Command("docker", "network", "ls", "-q", "--filter", "name=^"+l.network+"$").Output(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("the Docker network %s remains after down (%v)", l.network, err)
		}
	}
	after, err := testhost.TakeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if d := before.Diff(after); len(d) > 0 {
		t.Errorf("the machine changed:\n%s", strings.Join(d, "\n"))
	}
	return r.output()
}

func TestDemo(t *testing.T) {
	if err := testhost.CheckMachine(); err != nil {
		t.Skipf("demo: %v", err)
	}
	if _, err := os.Stat("/var/run/docker.sock"); err != nil {
		t.Skip("demo: needs the machine's Docker Engine")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("demo: needs the docker CLI")
	}
	bin := buildDemo(t)
	before, err := testhost.TakeSnapshot()
	if err != nil {
		t.Fatal(err)
	}

	// Ctrl-C at a stage, then down; and oac-demo killed while the
	// installer runs, which goes on without it until down.
	for _, stage := range []struct {
		name, at string
		sig      syscall.Signal
		want     int
	}{
		{"interrupted while the console starts", `^==> oac-demo: start the development console`, syscall.SIGINT, 130},
		{"interrupted while the test host boots", `^==> oac-demo: boot the test host`, syscall.SIGINT, 130},
		{"interrupted while the installer downloads", `^==> Download and verify node files`, syscall.SIGINT, 130},
		{"interrupted while the node registers", `^==> Register the node with Core`, syscall.SIGINT, 130},
		{"killed while the installer runs", `^==> Check the sandbox runtime`, syscall.SIGKILL, -1},
	} {
		t.Run(stage.name, func(t *testing.T) {
			stateDir := filepath.Join(t.TempDir(), "state")
			r := startDemo(t, bin, stateDir, "up")
			signalled := r.signalAt(regexp.MustCompile(stage.at), stage.sig)
			code := r.wait(t)
			t.Logf("up (exit %d):\n%s", code, r.output())
			if !signalled {
				t.Errorf("up ended before %q", stage.at)
			} else if code != stage.want && code != 0 {
				t.Errorf("up exited %d, want %d", code, stage.want)
			}
			out := down(t, bin, stateDir, before)
			t.Logf("down:\n%s", out)
			// up again in the same directory starts afresh.
			if _, err := os.Lstat(stateDir); err == nil {
				t.Fatal("the state directory remains")
			}
		})
	}

	t.Run("up and down", func(t *testing.T) {
		stateDir := filepath.Join(t.TempDir(), "state")
		r := startDemo(t, bin, stateDir, "up")
		code := r.wait(t)
		out := r.output()
		t.Logf("up (exit %d):\n%s", code, out)
		if code != 0 {
			t.Fatalf("up exited %d", code)
		}
		if strings.Count(out, "Node installation complete.") != 1 || strings.Count(out, "No change: the node is installed, registered and running.") != 1 ||
			strings.Count(out, "Core connection: connected") != 2 {
			t.Error("up did not print the installation's and the rerun's summaries")
		}
		if !regexp.MustCompile(`(?m)^installation [0-9a-f-]{36}: ok$`).MatchString(out) {
			t.Error("up did not print a healthy status")
		}
		if !strings.Contains(out, "'<enrollment token>'") {
			t.Error("up did not print the bootstrap command with the token left out")
		}
		l := readLeftovers(t, stateDir)
		if len(l.hosts) != 1 || !l.hosts[0].Running() {
			t.Fatalf("after up the test host is not running: %+v", l.hosts)
		}
		// The installation lives in the test host's copies only.
		if _, err := os.Stat(filepath.Join(l.hosts[0].Etc(), "systemd/system", l.network+".service")); err != nil {
			t.Errorf("the node's unit is not in the test host's /etc: %v", err)
		}

		again := startDemo(t, bin, stateDir, "up")
		if code := again.wait(t); code == 0 || !strings.Contains(again.output(), "already up") {
			t.Errorf("a second up exited %d:\n%s", code, again.output())
		}

		out = down(t, bin, stateDir, before)
		t.Logf("down:\n%s", out)
		for _, want := range []string{"removed node ", "is uninstalled from this host.", "test host ended", "oac-devcore (pid", "unchanged:"} {
			if !strings.Contains(out, want) {
				t.Errorf("down did not print %q", want)
			}
		}
		// down with nothing up changes nothing and succeeds.
		r = startDemo(t, bin, stateDir, "down")
		if code := r.wait(t); code != 0 || !strings.Contains(r.output(), "nothing to remove") {
			t.Errorf("down with nothing up exited %d:\n%s", code, r.output())
		}
	})
}
