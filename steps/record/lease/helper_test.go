package lease

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary act as a native helper: with
// LEASE_TEST_HELPER_FD set it adopts the inherited lease descriptor, says
// "ready" and holds the lease until its standard input closes.
func TestMain(m *testing.M) {
	if fd := os.Getenv("LEASE_TEST_HELPER_FD"); fd != "" {
		var n uintptr
		fmt.Sscan(fd, &n)
		f, err := AdoptInherited(n, "lease")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		f.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// publishFinal writes generation g's final configuration.
func publishFinal(t *testing.T, dir string, g int64) {
	t.Helper()
	writeFile(t, filepath.Join(dir, fmt.Sprintf("%d.json", g)),
		[]byte(fmt.Sprintf(`{"installation_id": %q, "generation": %d, "provider": "docker"}`, testInstallation, g)), 0o600)
}

func TestHelperHoldsSharedLease(t *testing.T) {
	dir := genDir(t)
	initLease(t, dir, 12)
	publishFinal(t, dir, 12)

	ref, err := AcquireForHelper(context.Background(), dir, testID(12), uid, nil)
	if err != nil {
		t.Fatalf("AcquireForHelper: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	fd := ref.Attach(cmd)
	cmd.Env = append(os.Environ(), fmt.Sprintf("LEASE_TEST_HELPER_FD=%d", fd))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		ref.Release()
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}
	helperPID := cmd.Process.Pid

	collector, err := Open(dir, testID(12), uid)
	if err != nil {
		t.Fatal(err)
	}
	defer collector.Close()
	if err := collector.TryExclusive(); !errors.Is(err, ErrHelperActive) {
		t.Fatalf("TryExclusive with a live helper = %v, want ErrHelperActive", err)
	}

	reports, err := Inspect(dir, uid)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || reports[0].Lease.State != StateOK {
		t.Fatalf("reports %+v", reports)
	}
	var found bool
	for _, h := range reports[0].Holders {
		if h.PID == helperPID {
			found = true
			if h.Mode != ModeShared || h.UID != uid || h.Command == "" || h.Source != "descriptor" {
				t.Errorf("helper holder %+v", h)
			}
		}
	}
	if !found {
		t.Fatalf("helper PID %d not among holders %+v", helperPID, reports[0].Holders)
	}
	// A generation a helper serves is in use, not stuck: no next step.
	if len(reports[0].Next) != 0 {
		t.Errorf("next steps %q for a generation a helper serves", reports[0].Next)
	}
	// Beside another reason to look, the next steps name the helper.
	if err := WriteCollecting(dir, Collecting{Identity: testID(12)}, uid); err != nil {
		t.Fatal(err)
	}
	if reports, err = Inspect(dir, uid); err != nil {
		t.Fatal(err)
	}
	if next := strings.Join(reports[0].Next, "\n"); !strings.Contains(next, fmt.Sprintf("PID %d", helperPID)) || !strings.Contains(next, "holds the lease shared") {
		t.Errorf("next steps %q of an unfinished collection do not name the helper holding the lease", reports[0].Next)
	}

	// The helper exits, but our copy keeps the lease until Release.
	stdin.Close()
	waitExited(t, helperPID)
	if err := collector.TryExclusive(); !errors.Is(err, ErrHelperActive) {
		t.Fatalf("TryExclusive before our copy is released = %v, want ErrHelperActive", err)
	}
	if err := WaitHelper(ref, cmd); err != nil {
		t.Fatalf("WaitHelper: %v", err)
	}
	if err := collector.TryExclusive(); err != nil {
		t.Fatalf("TryExclusive after Wait and Release: %v", err)
	}
	reports, _ = Inspect(dir, uid)
	for _, h := range reports[0].Holders {
		if h.PID == helperPID {
			t.Errorf("exited helper still listed: %+v", h)
		}
	}
}

// waitExited waits until pid is a zombie or gone (it is our child, not yet
// waited for).
func waitExited(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		// "pid (comm) S ..." — the state follows the last ')'.
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] == ')' {
				if i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X') {
					return
				}
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("helper %d did not exit", pid)
}

func TestAcquireForHelperRefusals(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		err   error
	}{
		{"no final configuration", func(t *testing.T, dir string) {}, ErrGenerationBusy},
		{"preparing", func(t *testing.T, dir string) {
			publishFinal(t, dir, 12)
			writeFile(t, filepath.Join(dir, "12.preparing"), []byte("{}"), 0o600)
		}, ErrGenerationBusy},
		{"collecting", func(t *testing.T, dir string) {
			publishFinal(t, dir, 12)
			writeFile(t, filepath.Join(dir, "12.collecting"), []byte("{}"), 0o600)
		}, ErrGenerationBusy},
		{"dropped as a dangling symlink", func(t *testing.T, dir string) {
			publishFinal(t, dir, 12)
			os.Symlink("nowhere", filepath.Join(dir, "12.dropped"))
		}, ErrGenerationBusy},
		{"configuration of another generation", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "12.json"), []byte(fmt.Sprintf(`{"installation_id": %q, "generation": 11}`, testInstallation)), 0o600)
		}, ErrIdentityMismatch},
		{"missing identity", func(t *testing.T, dir string) {
			publishFinal(t, dir, 12)
			os.Remove(filepath.Join(dir, "12.lease-identity"))
		}, ErrIdentityMissing},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := genDir(t)
			initLease(t, dir, 12)
			c.setup(t, dir)
			ref, err := AcquireForHelper(context.Background(), dir, testID(12), uid, nil)
			if err == nil {
				ref.Release()
			}
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			// Nothing is held after a refusal.
			l, err := Open(dir, testID(12), uid)
			if err != nil {
				if c.err == ErrIdentityMissing {
					return
				}
				t.Fatal(err)
			}
			defer l.Close()
			if err := l.TryExclusive(); err != nil {
				t.Errorf("lease still held after a refusal: %v", err)
			}
		})
	}
}

func TestAcquireForHelperWaitsForCollector(t *testing.T) {
	dir := genDir(t)
	initLease(t, dir, 12)
	publishFinal(t, dir, 12)
	collector, err := Open(dir, testID(12), uid)
	if err != nil {
		t.Fatal(err)
	}
	if err := collector.TryExclusive(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if _, err := AcquireForHelper(ctx, dir, testID(12), uid, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
	got := make(chan error, 1)
	go func() {
		ref, err := AcquireForHelper(context.Background(), dir, testID(12), uid, nil)
		if err == nil {
			ref.Release()
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	collector.Close()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("AcquireForHelper after the collector finished: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("AcquireForHelper did not take the lease after the collector released it")
	}
}

func TestStartHelperReleasesOnStartFailure(t *testing.T) {
	dir := genDir(t)
	initLease(t, dir, 12)
	publishFinal(t, dir, 12)
	ref, err := AcquireForHelper(context.Background(), dir, testID(12), uid, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := StartHelper(ref, exec.Command(filepath.Join(dir, "no-such-helper"))); err == nil {
		t.Fatal("StartHelper of a missing program succeeded")
	}
	l, err := Open(dir, testID(12), uid)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.TryExclusive(); err != nil {
		t.Errorf("lease held after a failed start: %v", err)
	}
}
