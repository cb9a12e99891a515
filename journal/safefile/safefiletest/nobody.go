package safefiletest

import (
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
