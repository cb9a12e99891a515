package launcher

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// wantSHA256 pins the launcher's bytes: a registered node keeps the
// launcher it was installed with, so a change here is a change every
// registered node's rerun refuses (as it refuses another installer).
const wantSHA256 = "82ba4f5c5686219349c1c66207e58942d61645f2debe3a2f373b2e9df4b9a534"

func TestBytesAreFixed(t *testing.T) {
	a, b := Bytes(), build()
	if !bytes.Equal(a, b) {
		t.Fatal("two builds of the launcher differ")
	}
	sum := sha256.Sum256(a)
	if got := hex.EncodeToString(sum[:]); got != wantSHA256 {
		t.Errorf("launcher sha256 %s, want %s (%d bytes)", got, wantSHA256, len(a))
	}
	if len(a) > MaxSize {
		t.Errorf("launcher is %d bytes, more than MaxSize %d", len(a), MaxSize)
	}
	zr, err := zip.NewReader(bytes.NewReader(a), int64(len(a)))
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) != 1 || zr.File[0].Name != "__main__.py" || !zr.File[0].Modified.Equal(modified) || zr.Comment != "" {
		t.Fatalf("archive entries %+v", zr.File)
	}
	rc, err := zr.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if src, err := io.ReadAll(rc); err != nil || string(src) != MainPy {
		t.Fatalf("__main__.py: %v\n%s", err, src)
	}
}

// stub is the helper the launcher runs in these tests: it prints its
// process id and group, each argument in brackets, whether SIGPIPE is
// ignored, writes a line to standard error and exits with $STUB_EXIT.
const stub = `#!/bin/sh
read -r pid _ _ _ pgid _ < /proc/$$/stat
printf 'pid=%s pgid=%s\n' "$pid" "$pgid"
for a in "$@"; do printf '[%s]\n' "$a"; done
ign=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status)
printf 'sigign=%s\n' "$ign"
echo 'helper stderr line' >&2
exit "${STUB_EXIT:-0}"
`

// decoy is a generation-preparer the launcher must not run: one in the
// working directory and on PATH.
const decoy = "#!/bin/sh\necho decoy ran\nexit 3\n"

type launch struct {
	pid            int
	code           int
	stdout, stderr string
}

func python(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("needs python3: the launcher is a Python zip application")
	}
	return p
}

// run starts python3 ARCHIVE ARGS in its own process group, in dir, with
// env, as the node program does.
func run(t *testing.T, dir string, env []string, archive string, args ...string) launch {
	t.Helper()
	cmd := exec.Command(python(t), append([]string{archive}, args...)...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := launch{pid: cmd.Process.Pid}
	err := cmd.Wait()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		l.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	l.stdout, l.stderr = stdout.String(), stderr.String()
	return l
}

// node lays out a node root with the launcher and helper, and a decoy
// directory; it returns the node root and the decoy directory.
func node(t *testing.T, helper string) (string, string) {
	t.Helper()
	base := t.TempDir()
	root, other := filepath.Join(base, "node"), filepath.Join(base, "elsewhere")
	for _, d := range []string{root, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "generation-preparer.pyz"), Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if helper != "" {
		if err := os.WriteFile(filepath.Join(root, "generation-preparer"), []byte(helper), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(other, "generation-preparer"), []byte(decoy), 0o700); err != nil {
		t.Fatal(err)
	}
	return root, other
}

// The launcher runs the helper beside it, never the one in the working
// directory or on PATH, with exactly its arguments (spaces, an empty one,
// bytes that are not UTF-8 included), in the same process (the pid the
// node program started, its own process group), with the helper's
// standard output, standard error and exit status, and SIGPIPE not
// ignored.
func TestLauncherExecsTheHelperBesideIt(t *testing.T) {
	root, other := node(t, stub)
	args := []string{"--installation-id", "0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c", "--generation-action", "prepare",
		"--generation", "2", "--specification-digest", strings.Repeat("ab", 32), "two words", "", "caf\xc3\xa9 \xff"}
	for _, code := range []int{0, 1, 65} {
		t.Run(fmt.Sprintf("exit %d", code), func(t *testing.T) {
			env := []string{"PATH=" + other + ":/usr/bin:/bin", "STUB_EXIT=" + strconv.Itoa(code)}
			l := run(t, other, env, filepath.Join(root, "generation-preparer.pyz"), args...)
			if l.code != code {
				t.Fatalf("exit %d, want %d\nstdout %q\nstderr %q", l.code, code, l.stdout, l.stderr)
			}
			want := fmt.Sprintf("pid=%d pgid=%d\n", l.pid, l.pid)
			for _, a := range args {
				want += "[" + a + "]\n"
			}
			lines := strings.SplitAfter(l.stdout, "sigign=")
			if len(lines) != 2 || lines[0] != want+"sigign=" {
				t.Errorf("stdout %q, want %q then sigign", l.stdout, want)
			}
			if len(lines) == 2 {
				mask, err := strconv.ParseUint(strings.TrimSpace(lines[1]), 16, 64)
				if err != nil || mask&(1<<(uint(syscall.SIGPIPE)-1)) != 0 || mask&(1<<(uint(syscall.SIGXFSZ)-1)) != 0 {
					t.Errorf("the helper starts with SigIgn %q: SIGPIPE or SIGXFSZ ignored", lines[1])
				}
			}
			if l.stderr != "helper stderr line\n" {
				t.Errorf("stderr %q", l.stderr)
			}
		})
	}
	// A relative path to the archive, from another directory: still the
	// helper beside the archive.
	l := run(t, filepath.Dir(root), []string{"PATH=" + other + ":/usr/bin:/bin"}, "node/generation-preparer.pyz", "--generation", "7")
	if l.code != 0 || !strings.Contains(l.stdout, "[--generation]\n[7]\n") || strings.Contains(l.stdout, "decoy") {
		t.Errorf("relative archive path: exit %d\n%s%s", l.code, l.stdout, l.stderr)
	}
}

// Without the helper beside it, the launcher exits 1 (never 65) and says
// which file it could not run; it runs no other generation-preparer.
func TestLauncherWithoutTheHelper(t *testing.T) {
	root, other := node(t, "")
	l := run(t, other, []string{"PATH=" + other + ":/usr/bin:/bin"}, filepath.Join(root, "generation-preparer.pyz"), "--generation-action", "collect")
	if l.code != 1 || strings.Contains(l.stdout, "decoy") ||
		!strings.Contains(l.stderr, "generation-preparer.pyz: cannot run "+filepath.Join(root, "generation-preparer")+": ") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", l.code, l.stdout, l.stderr)
	}
}
