package lease

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestLockHolders: a lock held by another live process is listed with its
// pid, argv[0] and uid; once the process is gone, or for a file nobody
// locks, there is no holder; LockHolders itself takes no lock.
func TestLockHolders(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "install.journal.lock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if hs, err := LockHolders(path); err != nil || len(hs) != 0 {
		t.Fatalf("unlocked: %+v %v", hs, err)
	}
	if hs, err := LockHolders(filepath.Join(dir, "missing")); err != nil || len(hs) != 0 {
		t.Fatalf("missing: %+v %v", hs, err)
	}
	flockBin, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("needs flock(1) to hold a lock in another process")
	}
	// --no-fork: flock itself becomes sleep, so the pid that took the
	// lock is the process that holds it.
	cmd := exec.Command(flockBin, "--no-fork", "--exclusive", path, "sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Wait until flock has exec'd sleep and the lock is taken (a
	// non-blocking try fails).
	for {
		if b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "cmdline")); !strings.HasPrefix(string(b), "sleep\x00") {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		f.Close()
		if err != nil {
			break
		}
	}
	hs, err := LockHolders(path)
	if err != nil || len(hs) != 1 {
		t.Fatalf("held: %+v %v", hs, err)
	}
	h := hs[0]
	if h.PID != cmd.Process.Pid || h.Mode != ModeExclusive || h.UID != os.Getuid() || h.Command != "sleep" || h.Waiting {
		t.Errorf("holder %+v, want pid %d sleep uid %d", h, cmd.Process.Pid, os.Getuid())
	}
	cmd.Process.Kill()
	cmd.Wait()
	if hs, err := LockHolders(path); err != nil || len(hs) != 0 {
		t.Errorf("after the holder died: %+v %v", hs, err)
	}
}
