package safefiletest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Nobody is the user and group id the unprivileged process runs as.
const Nobody = 65534

// SharedDir returns a new directory that every user may traverse and read
// but only root may write (mode 0755), removed when the test ends. A
// t.TempDir() is root's alone (0700), so an unprivileged process works
// below SharedDir instead.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// RunAsNobody runs the test named child of the running test binary as user
// and group Nobody, with env as its whole environment, and returns its
// combined output and exit error. The binary's own build directory is
// root's alone, so a copy in a SharedDir is run. It needs root.
func RunAsNobody(t testing.TB, child string, env ...string) ([]byte, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("RunAsNobody needs root")
	}
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dir := SharedDir(t)
	exe := filepath.Join(dir, filepath.Base(os.Args[0]))
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^"+child+"$", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	return cmd.CombinedOutput()
}

// Unwritable checks that attempt, given a path in a directory the process
// may not write, fails with a permission error and leaves the directory
// empty. Root ignores directory permissions, so as root the attempt runs
// as Nobody in the child test named child, which calls UnwritableChild
// with the same env and attempt; env names the variable that carries the
// path.
func Unwritable(t testing.TB, child, env string, attempt func(path string) error) {
	t.Helper()
	dir := filepath.Join(SharedDir(t), "ro")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "target")
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		if err := attempt(path); !errors.Is(err, os.ErrPermission) {
			t.Fatalf("in an unwritable directory: want a permission error, got %v", err)
		}
	} else if out, err := RunAsNobody(t, child, env+"="+path); err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Fatalf("left behind: %v", names)
	}
}

// UnwritableChild is the child side of Unwritable: without env it skips
// (it runs only when started by Unwritable); with it, it exits 0 when
// attempt fails with a permission error and 1 otherwise.
func UnwritableChild(t testing.TB, env string, attempt func(path string) error) {
	path := os.Getenv(env)
	if path == "" {
		t.Skip("runs only as the unprivileged process of its parent test")
	}
	if err := attempt(path); !errors.Is(err, os.ErrPermission) {
		fmt.Fprintf(os.Stderr, "in an unwritable directory: want a permission error, got %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}
