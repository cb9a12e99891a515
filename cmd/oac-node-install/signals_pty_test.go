package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/host/privsep"
)

// The interrupt tests' service-account roles: a download that reports its
// progress until it is killed, and a step that hangs; both ignore SIGTERM,
// the worst a child can do, so that only the kill after the grace period
// ends them.
const (
	roleTestDownload = "test-download"
	roleTestHang     = "test-hang"
)

func init() {
	childRoles[roleTestDownload] = func(ctx context.Context, c *privsep.Child) (any, error) {
		signal.Ignore(syscall.SIGTERM)
		c.Phase("Download the Runtime")
		const total = 512 << 20
		for done := int64(0); ; done = (done + 3<<20) % total {
			c.Transfer("runtime.tar", done, total)
			time.Sleep(20 * time.Millisecond)
		}
	}
	childRoles[roleTestHang] = func(ctx context.Context, c *privsep.Child) (any, error) {
		signal.Ignore(syscall.SIGTERM)
		c.Phase("Prepare the node root")
		select {}
	}
}

// TestInterruptChild is the command at one point of a run, in a terminal,
// for TestInterruptsAnswerAtOnce: OAC_INTERRUPT_POINT names the point.
// "download" and "child-step" run a service-account child of the test
// roles through privsep as install does (the same output, signal watching
// and failure report); "status" is the status command with its child
// waiting for Core, which does not answer; "token-prompt" is the
// enrollment token prompt, in root's own code.
func TestInterruptChild(t *testing.T) {
	point := os.Getenv("OAC_INTERRUPT_POINT")
	if point == "" {
		t.Skip("runs only as the interrupt tests' child process")
	}
	c := &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	switch point {
	case "status":
		h := newStatusHost(t)
		h.core.mu.Lock() // Core never answers: the child waits for it
		c.hostRoot = h.root
		os.Exit(c.run([]string{"status"}))
	case "token-prompt":
		os.Exit(c.run([]string{"command", "--token-stdin", "--console", "https://console.example.com",
			"--core-url", "https://core.example.com", "--provider", "docker",
			"--installation-id", testID, "--sha256", strings.Repeat("a", 64)}))
	}
	role := roleTestDownload
	if point == "child-step" {
		role = roleTestHang
	}
	ctx, stop := watchSignals(context.Background(), c.stopping)
	defer stop()
	bin, err := privsep.Capture()
	if err != nil {
		t.Fatal(err)
	}
	out := newOutput(c.stdout)
	c.out.Store(out)
	_, err = privsep.Run(ctx, privsep.Options{Binary: bin, UID: 65534, GID: 65534, Home: "/", Role: role,
		Output: out.beside(c.stderr), Progress: out.event, Signals: childSignals})
	out.finish()
	c.out.Store(nil)
	if err == nil {
		err = errors.New("the test role ended")
	}
	if interruption(ctx) != nil {
		err = &interruptedRun{err: err}
	}
	os.Exit(failure{prefix: prefixInstall, path: "oac-node-install", changing: true}.report(c.stderr, err, interruption(ctx)))
}

// Ctrl-C, SIGTERM and SIGHUP answer at once wherever the command is: in a
// terminal, "Stopping…" within 200 ms of the signal, and the command ends
// within a second with the interrupted message and 128 + the signal's
// number, its service-account child and that child's group gone, even a
// child that ignores SIGTERM or is stopped (SIGSTOP). A second Ctrl-C
// changes nothing. Each case logs its timings.
func TestInterruptsAnswerAtOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the command's child runs as uid 65534")
	}
	type sendFunc func(t *testing.T, master *os.File, pid int)
	ctrlC := func(t *testing.T, master *os.File, _ int) { master.Write([]byte{3}) }
	kill := func(sig syscall.Signal) sendFunc {
		return func(t *testing.T, _ *os.File, pid int) { syscall.Kill(pid, sig) }
	}
	for _, tc := range []struct {
		name, point string
		// ready is what the command prints once it is at the point.
		ready string
		// stopChild stops (SIGSTOP) the service-account child first.
		stopChild bool
		send      sendFunc
		twice     bool
		want      int
		message   string
	}{
		{"Ctrl-C during a download", "download", "runtime.tar: ", false, ctrlC, false, 130, "Interrupted. Nothing is lost"},
		{"Ctrl-C twice during a download", "download", "runtime.tar: ", false, ctrlC, true, 130, "Interrupted. Nothing is lost"},
		{"SIGTERM during a download", "download", "runtime.tar: ", false, kill(syscall.SIGTERM), false, 143, "Interrupted. Nothing is lost"},
		{"SIGHUP during a download", "download", "runtime.tar: ", false, kill(syscall.SIGHUP), false, 129, "Interrupted. Nothing is lost"},
		{"Ctrl-C in a hung child step", "child-step", "Prepare the node root", false, ctrlC, false, 130, "Interrupted. Nothing is lost"},
		{"Ctrl-C in a stopped child step", "child-step", "Prepare the node root", true, ctrlC, false, 130, "Interrupted. Nothing is lost"},
		{"Ctrl-C in status waiting for Core", "status", "", false, ctrlC, false, 130, "Interrupted"},
		{"Ctrl-C in status with a stopped child", "status", "", true, ctrlC, false, 130, "Interrupted"},
		{"Ctrl-C at the token prompt", "token-prompt", "Enrollment token: ", false, ctrlC, false, 130, tokenPromptMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			master, slave := openPTY(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestInterruptChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "OAC_INTERRUPT_POINT="+tc.point, "TERM=xterm")
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			slave.Close()
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			var screen timedBuffer
			go screen.copyFrom(master)
			defer func() {
				select {
				case <-exited:
				default:
					cmd.Process.Kill()
				}
			}()

			child := 0
			if tc.point != "token-prompt" {
				child = accountChildOf(t, cmd.Process.Pid, 65534)
			}
			if tc.ready != "" {
				screen.waitFor(t, tc.ready)
			} else {
				time.Sleep(300 * time.Millisecond) // the child is in flight
			}
			if tc.stopChild {
				if err := syscall.Kill(child, syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
			}
			sent := time.Now()
			tc.send(t, master, cmd.Process.Pid)
			stopping := screen.waitFor(t, stoppingMessage)
			if tc.twice {
				time.Sleep(100 * time.Millisecond)
				tc.send(t, master, cmd.Process.Pid)
			}
			var err error
			select {
			case err = <-exited:
			case <-time.After(10 * time.Second):
				t.Fatalf("the command did not end within 10 s of the signal:\n%s", screen.String())
			}
			ended := time.Since(sent)
			text := screen.settled()
			t.Logf("%s: %q after %v, ended after %v", tc.name, stoppingMessage, stopping.Sub(sent).Round(time.Millisecond), ended.Round(time.Millisecond))
			if d := stopping.Sub(sent); d > 200*time.Millisecond {
				t.Errorf("%q printed %v after the signal, want within 200ms", stoppingMessage, d)
			}
			if ended > time.Second {
				t.Errorf("the command ended %v after the signal, want within 1s", ended)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.want {
				t.Errorf("exit %v, want %d:\n%s", err, tc.want, text)
			}
			if !strings.Contains(text, tc.message) {
				t.Errorf("no %q on the terminal:\n%s", tc.message, text)
			}
			// "Stopping…" starts a line of its own, never the end of a
			// progress line or the prompt; a terminal that echoes
			// controls shows the Ctrl-C typed as ^C before it.
			line := "\n" + strings.TrimPrefix(text, "^C")
			if !strings.Contains(strings.ReplaceAll(line, "\n^C", "\n"), "\n"+stoppingMessage) {
				t.Errorf("%q does not start a line:\n%q", stoppingMessage, text)
			}
			if child != 0 {
				if err := syscall.Kill(child, 0); err == nil {
					t.Errorf("the service-account child %d is still running", child)
				}
			}
		})
	}
}

// accountChildOf returns the pid of a process of uid whose parent is
// parent, waiting up to 20 s for one to appear.
func accountChildOf(t *testing.T, parent, uid int) int {
	t.Helper()
	want := fmt.Sprintf("PPid:\t%d\n", parent)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		procs, _ := filepath.Glob("/proc/[0-9]*/status")
		for _, p := range procs {
			data, err := os.ReadFile(p)
			if err != nil || !strings.Contains(string(data), want) || !strings.Contains(string(data), fmt.Sprintf("Uid:\t%d\t", uid)) {
				continue
			}
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return pid
		}
	}
	t.Fatal("no service-account child appeared")
	return 0
}

// timedBuffer is what a terminal's master read, with when each text
// first appeared.
type timedBuffer struct {
	syncBuffer
}

// copyFrom reads master until the terminal is gone.
func (b *timedBuffer) copyFrom(master *os.File) {
	buf := make([]byte, 4096)
	for {
		n, err := master.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return
		}
	}
}

// waitFor waits until the terminal showed want and returns when it first
// saw it (polled every millisecond).
func (b *timedBuffer) waitFor(t *testing.T, want string) time.Time {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		if strings.Contains(b.String(), want) {
			return time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q on the terminal:\n%q", want, b.String())
		}
	}
}

// settled is what the terminal showed, once the last output of the ended
// command was read, with the terminal's \r\n made \n.
func (b *timedBuffer) settled() string {
	time.Sleep(50 * time.Millisecond)
	return strings.ReplaceAll(b.String(), "\r\n", "\n")
}
