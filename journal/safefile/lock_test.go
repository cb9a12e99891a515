package safefile

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
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The lock tests hold locks in a second process: the test binary re-executed
// with lockHelperEnv naming the lock file. See TestMain.
const (
	lockHelperEnv  = "SAFEFILE_TEST_LOCK_HELPER"
	lockSharedEnv  = "SAFEFILE_TEST_LOCK_SHARED"
	lockHelperLine = "locked"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(lockHelperEnv); path != "" {
		os.Exit(lockHelper(path, os.Getenv(lockSharedEnv) != ""))
	}
	os.Exit(m.Run())
}

// lockHelper takes the lock, says so on stdout, and holds it until stdin
// closes.
func lockHelper(path string, shared bool) int {
	take := TryLock
	if shared {
		take = TryLockShared
	}
	l, err := take(path, 0o600)
	if err != nil {
		fmt.Println("error:", err)
		return 3
	}
	fmt.Println(lockHelperLine)
	io.Copy(io.Discard, os.Stdin)
	l.Unlock()
	return 0
}

// holdLock starts a process holding the lock on path and returns a function
// that makes it release the lock and exit.
func holdLock(t *testing.T, path string, shared bool) (release func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+path)
	if shared {
		cmd.Env = append(cmd.Env, lockSharedEnv+"=1")
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != lockHelperLine {
		stdin.Close()
		cmd.Wait()
		t.Fatalf("lock holder: %q", line)
	}
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("lock holder: %v", err)
		}
	}
	t.Cleanup(release)
	return release
}

func TestLockAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "install.lock")
	release := holdLock(t, path, false)

	if _, err := TryLock(path, 0o600); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock while held: got %v, want ErrLocked", err)
	}
	if _, err := TryLockShared(path, 0o600); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLockShared while held: got %v, want ErrLocked", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := LockContext(ctx, path, 0o600)
	if !errors.Is(err, ErrLocked) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LockContext while held: got %v", err)
	}

	// A waiting Lock gets the lock once the holder exits.
	got := make(chan error, 1)
	go func() {
		l, err := Lock(path, 0o600)
		if err == nil {
			// Release before reporting: the test takes the lock again
			// as soon as it hears back.
			err = l.Unlock()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("Lock returned while held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Lock still waiting after the holder exited")
	}
	l, err := TryLock(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	must(t, l.Unlock())
	must(t, l.Unlock())
}

func TestLockSharedAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "1.lease")
	holdLock(t, path, true)
	l, err := TryLockShared(path, 0o600)
	if err != nil {
		t.Fatalf("second shared lock: %v", err)
	}
	defer l.Unlock()
	if _, err := TryLock(path, 0o600); !errors.Is(err, ErrLocked) {
		t.Fatalf("exclusive while shared: got %v", err)
	}
}

func TestLockWaitsForContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "host.lock")
	first, err := Lock(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	// The waiter must block until the holder lets go: it may only return
	// after released is set, just before the unlock.
	var released atomic.Bool
	time.AfterFunc(100*time.Millisecond, func() { released.Store(true); first.Unlock() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	second, err := LockContext(ctx, path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if !released.Load() {
		t.Fatal("LockContext returned while the lock was still held")
	}
	second.Unlock()
}

func TestLockFile(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "install.lock")

	l, err := TryLock(path, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	must(t, unix.Stat(path, &st))
	if st.Mode&0o7777 != 0o640 {
		t.Fatalf("created mode %04o", st.Mode&0o7777)
	}
	if dev, ino := l.FileID(); dev != st.Dev || ino != st.Ino {
		t.Fatal("FileID is not the lock file's")
	}
	l.Unlock()

	// An existing lock file is neither truncated nor given another mode.
	writeFile(t, path, "pid 1\n", 0o600)
	l, err = TryLock(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	if b, _ := os.ReadFile(path); string(b) != "pid 1\n" {
		t.Fatalf("lock file contents changed: %q", b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file mode changed: %v", fi.Mode())
	}

	// Unsafe lock files are refused.
	must(t, os.Symlink("install.lock", filepath.Join(dir, "link.lock")))
	if _, err := TryLock(filepath.Join(dir, "link.lock"), 0o600); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("symlink: got %v", err)
	}
	must(t, unix.Mkfifo(filepath.Join(dir, "fifo.lock"), 0o600))
	if _, err := TryLock(filepath.Join(dir, "fifo.lock"), 0o600); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("fifo: got %v", err)
	}
}

// lockFileChanges are the ways a lock file's name stops naming the inode
// a holder locked.
var lockFileChanges = []struct {
	name    string
	replace func(path string) error
}{
	{"renamed over", func(path string) error {
		if err := os.WriteFile(path+".new", nil, 0o600); err != nil {
			return err
		}
		return os.Rename(path+".new", path)
	}},
	{"removed", os.Remove},
}

func TestLockReplaced(t *testing.T) {
	for _, tt := range lockFileChanges {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "install.lock")
			afterFlock = func() {
				if err := tt.replace(path); err != nil {
					t.Error(err)
				}
			}
			t.Cleanup(func() { afterFlock = nil })
			_, err := TryLock(path, 0o600)
			if !errors.Is(err, ErrLockReplaced) {
				t.Fatalf("got %v, want ErrLockReplaced", err)
			}
			afterFlock = nil
			// The refused lock was released: the path can be locked again.
			l, err := TryLock(path, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			l.Unlock()
		})
	}
}

func TestRootLease(t *testing.T) {
	bothResolvers(t, func(t *testing.T) {
		dir := t.TempDir()
		must(t, os.MkdirAll(filepath.Join(dir, "state/node/generations"), 0o700))
		r := openTestRoot(t, dir)
		uid := os.Geteuid()
		lease := "state/node/generations/1.lease"
		opt := LockOptions{Create: CreateExclusive, Perm: 0o600, Expect: Expect{UID: uid, Mode: 0o600}}

		if _, err := r.TryLock(lease, LockOptions{Create: MustExist, Expect: opt.Expect}); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("missing lease: got %v", err)
		}
		l, err := r.TryLock(lease, opt)
		if err != nil {
			t.Fatal(err)
		}
		dev, ino, err := r.FileID(lease)
		if err != nil {
			t.Fatal(err)
		}
		if d, i := l.FileID(); d != dev || i != ino {
			t.Fatal("lease FileID differs from its name's")
		}
		if _, err := r.TryLock(lease, opt); !errors.Is(err, os.ErrExist) {
			t.Fatalf("second exclusive creation: got %v", err)
		}
		existing := LockOptions{Create: MustExist, Expect: opt.Expect}
		if _, err := r.TryLock(lease, existing); !errors.Is(err, ErrLocked) {
			t.Fatalf("while held: got %v", err)
		}
		l.Unlock()
		shared := existing
		shared.Shared = true
		s1, err := r.TryLock(lease, shared)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := r.TryLock(lease, shared)
		if err != nil {
			t.Fatal(err)
		}
		s1.Unlock()
		s2.Unlock()

		wrong := existing
		wrong.Expect.Mode = 0o644
		if _, err := r.TryLock(lease, wrong); !errors.Is(err, ErrUnsafe) {
			t.Fatalf("wrong mode: got %v", err)
		}
		must(t, os.Symlink("generations", filepath.Join(dir, "state/node/link")))
		if _, err := r.TryLock("state/node/link/1.lease", existing); !errors.Is(err, ErrUnsafe) {
			t.Fatalf("symlinked directory: got %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		l, err = r.LockContext(ctx, lease, existing)
		if err != nil {
			t.Fatal(err)
		}
		l.Unlock()
	})
}

// A holder notices when its lock file is replaced or removed after it was
// locked: the lock then excludes nobody.
func TestLockVerify(t *testing.T) {
	for _, tt := range lockFileChanges {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "install.lock")
			l, err := TryLock(path, 0o600)
			must(t, err)
			defer l.Unlock()
			must(t, l.Verify())
			must(t, tt.replace(path))
			if err := l.Verify(); !errors.Is(err, ErrLockReplaced) {
				t.Fatalf("got %v, want ErrLockReplaced", err)
			}
		})
	}
}
