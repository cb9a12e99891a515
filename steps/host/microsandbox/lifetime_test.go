package microsandbox

import (
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

	"golang.org/x/sys/unix"
)

// TestMain lets the test binary serve as a runner (envRunner).
func TestMain(m *testing.M) {
	if arg := os.Getenv(envRunner); arg != "" {
		os.Exit(runner(arg))
	}
	os.Exit(m.Run())
}

// envRunner makes the test binary a runner: "<lock file> <fake msb dir>".
// It takes the lock, as the generation helper takes install.lock, and
// loads an image through the CLI with the lock to inherit; the fake msb
// never finishes the load.
const envRunner = "OAC_MSB_TEST_RUNNER"

func runner(arg string) int {
	lockPath, dir, _ := strings.Cut(arg, " ")
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err == nil {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "runner: lock:", err)
		return 1
	}
	cli := &CLI{MSB: filepath.Join(dir, "msb"), Store: filepath.Join(dir, "store"), Firmware: filepath.Join(dir, "libkrunfw.so.5.6.1"), Inherit: []*os.File{f}}
	err = cli.LoadImage(context.Background(), "/srv/images/runtime.tar", refA)
	fmt.Fprintln(os.Stderr, "runner: load returned:", err)
	return 1
}

// tryLock reports whether a new open file description of path can take the
// lock now; it releases it at once.
func tryLock(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z"
}

// eventually polls cond until it holds, failing the test after a generous
// bound (the condition is expected at once; the bound only keeps a broken
// build from hanging).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still not so: %s", what)
		}
	}
}

// readPID waits for the fake msb to write a pid file.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	eventually(t, "the fake msb wrote "+filepath.Base(path), func() bool {
		data, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	})
	return pid
}

// TestChildrenDoNotOutliveTheLock SIGKILLs a runner while its msb call
// (a load) runs, with a process that msb started still at work: msb dies
// with the runner, and the lock the runner held stays held as long as
// msb's own child lives, then is free.
func TestChildrenDoNotOutliveTheLock(t *testing.T) {
	f := newFake(t)
	f.then("image-load", `echo $$ > "$D/msb.pid.new"; mv "$D/msb.pid.new" "$D/msb.pid"
sleep 300 &
echo $! > "$D/worker.pid.new"; mv "$D/worker.pid.new" "$D/worker.pid"
wait`)
	lockPath := filepath.Join(t.TempDir(), "install.lock")
	if err := os.WriteFile(lockPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRunner+"="+lockPath+" "+f.dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	msb := readPID(t, filepath.Join(f.dir, "msb.pid"))
	worker := readPID(t, filepath.Join(f.dir, "worker.pid"))
	defer syscall.Kill(worker, syscall.SIGKILL)
	defer syscall.Kill(msb, syscall.SIGKILL)
	if tryLock(t, lockPath) {
		t.Fatalf("the lock is free while the runner holds it; runner: %s", stderr.String())
	}

	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	eventually(t, fmt.Sprintf("msb (pid %d) died with the runner", msb), func() bool { return !running(msb) })
	if !running(worker) {
		t.Fatalf("msb's worker (pid %d) is gone too early for the test", worker)
	}
	if tryLock(t, lockPath) {
		t.Errorf("the lock is free while msb's worker (pid %d), started under it, still runs", worker)
	}

	syscall.Kill(worker, syscall.SIGKILL)
	eventually(t, "the lock is free once the last process of the call has exited", func() bool { return tryLock(t, lockPath) })
}
