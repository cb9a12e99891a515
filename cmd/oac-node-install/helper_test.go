package main

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// TestHelperChild is the command under test when a helper test re-executes
// the test binary: it runs the command line in $OAC_HELPER_ARGS and exits
// with its status.
func TestHelperChild(t *testing.T) {
	args := os.Getenv("OAC_HELPER_ARGS")
	if args == "" {
		t.Skip("runs only as the generation helper tests' child process")
	}
	os.Exit(run(strings.Fields(args), os.Stdin, os.Stdout, os.Stderr))
}

func helperArgs(action string, g int64, digest string) []string {
	return []string{"--generation-action", action, "--generation", itoa(g), "--specification-digest", digest,
		"--installation-id", generationtest.InstallationID}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestHelperRefusesRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: checks that the helper refuses to run as uid 0")
	}
	hostRoot := t.TempDir()
	code, _, errOut := runOn(t, hostRoot, helperArgs("prepare", 2, strings.Repeat("a", 64))...)
	if code != exitFailure || !strings.HasPrefix(errOut, prefixHelper) || !strings.Contains(errOut, "never as root") || !strings.Contains(errOut, "Nothing was changed.") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if entries, _ := os.ReadDir(hostRoot); len(entries) != 0 {
		t.Errorf("the refusal created %v", entries)
	}
}

// envRetainedHelper marks the environment of a helper test's helper run.
const envRetainedHelper = "OAC_TEST_RETAINED_HELPER"

// runAsRetainedHelper makes the test binary the command when it was copied
// into a node root as the retained helper (layout.HelperFile) and started
// there, through the launcher, by a helper test (envRetainedHelper set): it
// runs its arguments as the installer binary would and exits.
func runAsRetainedHelper() {
	if filepath.Base(os.Args[0]) != layout.HelperFile || os.Getenv(envRetainedHelper) != "1" {
		return
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// helperProcess runs the retained helper as the platform's node program
// does, python3 <root>/generation-preparer.pyz ARGS in its own process
// group, as uid/gid nobody; the helper beside the launcher is the test
// binary (runAsRetainedHelper).
type helperProcess struct {
	python string
	root   string
	home   string
}

func (h *helperProcess) run(t *testing.T, args []string) (int, string) {
	t.Helper()
	cmd := exec.Command(h.python, append([]string{filepath.Join(h.root, layout.HelperLauncherFile)}, args...)...)
	cmd.Env = []string{"HOME=" + h.home, "PATH=/usr/bin:/bin", envRetainedHelper + "=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

// TestHelperAsTheNodeAccount runs the real command as an unprivileged
// account against a node root it owns, a fake Docker Engine on a unix
// socket and a TLS console and Core, through the retained launcher as the
// platform's node program runs it (python3 generation-preparer.pyz):
// prepare, repair and collect succeed, an artifact whose bytes do not
// verify exits 65 with the fixed line, and a specification Core does not
// hold exits 1.
func TestHelperAsTheNodeAccount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs the helper as another account (uid 65534)")
	}
	// The python3 the node's unit finds.
	python := nodePython("")
	if python == "" {
		t.Skip("needs python3: the node program runs the helper's launcher with it")
	}
	base, err := os.MkdirTemp("/tmp", "oac-helper-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)

	engine := dockertest.Start(t)
	sock := strings.TrimPrefix(engine.Host, "unix://")
	os.Chmod(filepath.Dir(sock), 0o755)
	os.Chmod(sock, 0o666)

	a, b := generationtest.BuildRelease(t, generationtest.CommitA), generationtest.BuildRelease(t, generationtest.CommitB)
	srv := generationtest.NewServer(t, a, b)
	home := filepath.Join(base, "home")
	generationtest.SetupNode(t, home, srv, release.ProviderDocker, a, engine.Host)
	engine.AddImage(dockertest.Image{ID: a.Image.ConfigDigest, OS: "linux", Architecture: "amd64"})
	root := filepath.Join(home, ".oac", "nodes", generationtest.InstallationID)
	// The installer binary retained beside the launcher: this test binary.
	copyFile(t, os.Args[0], filepath.Join(root, layout.HelperFile), 0o700)
	chownTree(t, home, 65534)
	h := &helperProcess{python: python, root: root, home: home}

	spec := b.Spec(t, release.ProviderDocker, 2)
	srv.SetSpec(2, spec)
	if code, out := h.run(t, helperArgs("prepare", 2, spec.Digest())); code != 0 {
		t.Fatalf("prepare: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(root, "state/node/generations/2.json")); err != nil {
		t.Fatalf("prepare published nothing: %v", err)
	}
	if engine.Loads() != 1 {
		t.Errorf("%d image loads, want 1", engine.Loads())
	}
	if code, out := h.run(t, helperArgs("repair", 2, spec.Digest())); code != 0 {
		t.Fatalf("repair: exit %d\n%s", code, out)
	}
	// The platform's node program adds --allow-insecure-origin for a node
	// whose identity allows it; the helper accepts it.
	if code, out := h.run(t, append(helperArgs("collect", 2, spec.Digest()), "--allow-insecure-origin")); code != 0 {
		t.Fatalf("collect: exit %d\n%s", code, out)
	}

	spec4 := b.Spec(t, release.ProviderDocker, 3)
	srv.SetSpec(4, spec4)
	// Collection removed the release's seccomp profile; the console now
	// serves other bytes than its SHA256SUMS lists.
	srv.Serve("/node-install/releases/"+generationtest.CommitB+"/"+release.PathSeccomp, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("{}\n"))
	})
	code, out := h.run(t, helperArgs("prepare", 4, spec4.Digest()))
	if code != exitTransfer || !strings.Contains(out, helperTransferLine) {
		t.Fatalf("checksum failure: exit %d, want %d with the fixed line\n%s", code, exitTransfer, out)
	}

	other := b.Spec(t, release.ProviderDocker, 5)
	code, out = h.run(t, helperArgs("prepare", 5, other.Digest()))
	if code != exitFailure || strings.Contains(out, helperTransferLine) {
		t.Fatalf("Core without the generation: exit %d, want %d\n%s", code, exitFailure, out)
	}
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func chownTree(t *testing.T, dir string, id int) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, id, id)
	})
	if err != nil {
		t.Fatal(err)
	}
}
