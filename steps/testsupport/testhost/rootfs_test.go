package testhost_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
)

// TestRootfsHost boots Debian's bullseye (systemd 247, the oldest the
// installer supports) from a rootfs: its own systemd is PID 1, cgroup2 is
// at /sys/fs/cgroup, the machine's engine answers, and the host leaves
// nothing behind (the last check, registered by StartWith).
func TestRootfsHost(t *testing.T) {
	suite := os.Getenv("OAC_TESTHOST_SUITE")
	if suite == "" {
		suite = "bullseye"
	}
	root := testhost.Rootfs(t, suite, testhost.BusDaemon)
	h := testhost.StartWith(t, testhost.Options{Rootfs: root})
	ctx := context.Background()
	run := func(argv ...string) string {
		t.Helper()
		r, err := h.Exec(ctx, argv...)
		if err != nil || r.Status != 0 {
			t.Fatalf("%q inside: exit %d, %v: %s", argv, r.Status, err, r.Stderr)
		}
		return strings.TrimSpace(string(r.Stdout))
	}
	want, err := os.ReadFile(filepath.Join(root, "etc/debian_version"))
	if err != nil {
		t.Fatal(err)
	}
	if got := run("cat", "/etc/debian_version"); got != strings.TrimSpace(string(want)) {
		t.Errorf("/etc/debian_version inside is %q, the rootfs's %q", got, want)
	}
	t.Logf("%s: %s", suite, strings.SplitN(run("systemctl", "--version"), "\n", 2)[0])
	if got := run("stat", "-f", "-c", "%T", "/sys/fs/cgroup"); got != "cgroup2fs" {
		t.Errorf("/sys/fs/cgroup inside is %s, not cgroup2", got)
	}
	if got := run("systemctl", "--failed", "--plain", "--no-legend"); got != "" {
		t.Errorf("failed units after boot:\n%s", got)
	}
	if h.DockerSocket != "" {
		if got := run("curl", "-fsS", "--max-time", "20", "--unix-socket", "/run/docker.sock", "http://docker/_ping"); got != "OK" {
			t.Errorf("the machine's engine does not answer inside: %q", got)
		}
	}
	// The host's writes stay in its overlay: the rootfs is unchanged.
	run("useradd", "--system", "--no-log-init", "oac-rootfs-probe")
	if b, _ := os.ReadFile(filepath.Join(root, "etc/passwd")); strings.Contains(string(b), "oac-rootfs-probe") {
		t.Error("the account was written to the cached rootfs")
	}
}

// TestRootfsMountedInside: a rootfs with a file system mounted inside is
// refused before anything is made.
func TestRootfsMountedInside(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("rootfs: needs root to mount")
	}
	root := t.TempDir()
	for _, d := range []string{"lib/systemd", "proc"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.WriteFile(filepath.Join(root, testhost.Systemd), nil, 0o755)
	if err := syscall.Mount("tmpfs", filepath.Join(root, "proc"), "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	defer syscall.Unmount(filepath.Join(root, "proc"), syscall.MNT_DETACH)
	ft := &fatalT{TB: t}
	func() {
		defer func() { recover() }()
		testhost.StartWith(ft, testhost.Options{Rootfs: root})
	}()
	if !strings.Contains(ft.msg, "has file systems mounted inside ("+filepath.Join(root, "proc")+")") {
		t.Fatalf("StartWith on a rootfs with a mount inside: %q", ft.msg)
	}
}

// fatalT records the first Fatal and stops the goroutine with a panic.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = strings.TrimSpace(strings.ReplaceAll(sprintf(format, args...), "\n", " "))
	panic(f)
}
func (f *fatalT) Fatal(args ...any) { f.msg = sprint(args...); panic(f) }
func (f *fatalT) Helper()           {}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
func sprint(args ...any) string                 { return fmt.Sprint(args...) }

// TestRootfsCacheWithoutMirror: a cached build is booted as it is when the
// mirror cannot be reached, and nothing is rebuilt.
func TestRootfsCacheWithoutMirror(t *testing.T) {
	root := testhost.Rootfs(t, "bullseye", testhost.BusDaemon)
	stamp, err := os.ReadFile(filepath.Join(root, ".oac-release"))
	if err != nil {
		t.Fatal(err)
	}
	saved := testhost.Mirror
	testhost.Mirror = "http://127.0.0.1:1/debian" // nothing listens on port 1
	defer func() { testhost.Mirror = saved }()
	if got := testhost.Rootfs(t, "bullseye", testhost.BusDaemon); got != root {
		t.Fatalf("without the mirror Rootfs returned %s, not the cached %s", got, root)
	}
	if again, err := os.ReadFile(filepath.Join(root, ".oac-release")); err != nil || string(again) != string(stamp) {
		t.Fatalf("the cached build changed without the mirror: %q, %v", again, err)
	}
}
