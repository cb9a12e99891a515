package bootstrap

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/devcore"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// fakeInstaller stands in for oac-node-install: it records its arguments,
// standard input and proxy variables in $FAKE_OUT, then, when $FAKE_OUT/ready
// is a FIFO, reports on it and waits on $FAKE_OUT/go before exiting with
// $FAKE_EXIT.
const fakeInstaller = `#!/bin/sh
o="$FAKE_OUT"
for a in "$@"; do printf '%s\n' "$a"; done > "$o/args"
cat > "$o/stdin"
for n in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
  eval "v=\${$n-unset}"; printf '%s=%s\n' "$n" "$v"
done > "$o/env"
if [ -p "$o/ready" ]; then echo running > "$o/ready"; read x < "$o/go"; fi
exit "${FAKE_EXIT:-0}"
`

// console is a development console serving fakeInstaller.
type console struct {
	s   *devcore.Server
	sha string
}

// shared is the one console of the package's tests (a fixture release
// takes a moment to build); TestMain stops it.
var shared struct {
	c   *console
	dir string
	err error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.c != nil {
		shared.c.s.Close()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

func startConsole(t *testing.T) *console {
	t.Helper()
	for _, c := range []string{"bash", "curl", "sha256sum", "flock"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("the generated command needs %s, which this machine lacks", c)
		}
	}
	if shared.c == nil && shared.err == nil {
		shared.c, shared.dir, shared.err = newConsole()
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.c
}

func newConsole() (*console, string, error) {
	dir, err := os.MkdirTemp("", "bootstrap-console-")
	if err != nil {
		return nil, "", err
	}
	inst := filepath.Join(dir, "installer")
	if err := os.WriteFile(inst, []byte(fakeInstaller), 0o700); err != nil {
		return nil, dir, err
	}
	s, err := devcore.Start(devcore.Config{DataDir: filepath.Join(dir, "data"), Listen: "127.0.0.1:0", Fixture: devcore.FixtureOptions{Installer: inst}})
	if err != nil {
		return nil, dir, err
	}
	return &console{s: s, sha: release.SHA256Hex([]byte(fakeInstaller))}, dir, nil
}

func (c *console) options(token string) Options {
	return Options{
		Console:        c.s.URL,
		CoreURL:        "https://core.example.com",
		InstallationID: testID,
		Provider:       "docker",
		SHA256:         c.sha,
		CoreCA:         c.s.CA.CertPath,
		Token:          token,
	}
}

// host is a node host's shell environment: a private HOME, a PATH whose
// first directory holds fakes, and the fake installer's output directory.
type host struct {
	home, bin, out string
	env            []string
}

func newHost(t *testing.T) *host {
	t.Helper()
	d := t.TempDir()
	h := &host{home: filepath.Join(d, "home"), bin: filepath.Join(d, "bin"), out: filepath.Join(d, "out")}
	for _, p := range []string{h.home, h.bin, h.out} {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	h.env = []string{"HOME=" + h.home, "PATH=" + h.bin + ":/usr/local/bin:/usr/bin:/bin", "FAKE_OUT=" + h.out, "LANG=C"}
	return h
}

// fake puts an executable script named name first on the PATH.
func (h *host) fake(t *testing.T, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(h.bin, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs the command the way a pasted one runs: bash reads it from a
// file (never from its own argv).
func (h *host) run(t *testing.T, command string, env ...string) result {
	t.Helper()
	cmd := h.command(t, command, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return result{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

func (h *host) command(t *testing.T, command string, env ...string) *exec.Cmd {
	t.Helper()
	f := filepath.Join(t.TempDir(), "command.sh")
	if err := os.WriteFile(f, []byte(command), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", f)
	cmd.Env = append(slices.Clone(h.env), env...)
	cmd.Dir = h.home
	cmd.Stdin = nil
	return cmd
}

func (h *host) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.out, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func (h *host) cache() string { return filepath.Join(h.home, ".oac", "node-bootstrap") }

func lines(s ...string) string { return strings.Join(s, "\n") + "\n" }

func render(t *testing.T, o Options) string {
	t.Helper()
	out, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCommandInstallsThroughTheDownloadedInstaller(t *testing.T) {
	c := startConsole(t)
	h := newHost(t)
	command := render(t, c.options("tok-1"))
	r := h.run(t, command)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if r.stdout != "==> Downloading node installer...\n==> Verifying node installer...\n" || r.stderr != "" {
		t.Fatalf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	want := lines("--enrollment-token-stdin", "--source-url", c.s.URL, "--core-url", "https://core.example.com",
		"--core-ca", c.s.CA.CertPath, "--provider", "docker", "--installation-id", testID)
	if got := h.read(t, "args"); got != want {
		t.Fatalf("installer arguments\n%s\nwant\n%s", got, want)
	}
	if got := h.read(t, "stdin"); got != "tok-1\n" {
		t.Fatalf("installer stdin %q", got)
	}
	st, err := os.Stat(filepath.Join(h.cache(), c.sha))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("kept installer: %v %v", st, err)
	}
	if st, err := os.Stat(h.cache()); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("cache directory: %v %v", st, err)
	}
	if _, err := os.Lstat(filepath.Join(h.cache(), "download.partial")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("download.partial left: %v", err)
	}

	// A rerun uses the verified installer it kept, without a download.
	r = h.run(t, command, "NO_COLOR=1")
	if r.code != 0 || r.stdout != "" {
		t.Fatalf("rerun: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if got := h.read(t, "args"); !strings.HasPrefix(got, "--no-color\n--enrollment-token-stdin\n") {
		t.Fatalf("NO_COLOR did not add --no-color: %q", got)
	}
}

func TestCommandPropagatesInstallerExit(t *testing.T) {
	c := startConsole(t)
	h := newHost(t)
	if r := h.run(t, render(t, c.options("tok")), "FAKE_EXIT=7"); r.code != 7 {
		t.Fatalf("exit %d, want the installer's 7 (stderr %q)", r.code, r.stderr)
	}
}

func TestCommandRefusesBeforeRunningTheInstaller(t *testing.T) {
	c := startConsole(t)
	for _, tc := range []struct {
		name  string
		edit  func(*Options)
		setup func(*testing.T, *host)
		code  int
		msg   string
	}{
		{"download failure", func(o *Options) {
			// The console answers 404 to another Host than its own origin.
			o.Console = strings.Replace(o.Console, "127.0.0.1", "localhost", 1)
		}, nil, 22, "Cannot download the node installer from https://localhost:"},
		{"untrusted certificate", func(o *Options) { o.CoreCA = "" }, nil, 60, "TLS certificate"},
		{"checksum mismatch", func(o *Options) { o.SHA256 = strings.Repeat("0", 64) }, nil, 1, "checksum; generate a fresh command"},
		{"unsupported platform", nil, func(t *testing.T, h *host) { h.fake(t, "uname", "echo Linux; [ \"$1\" = -m ] && echo aarch64\n") }, 1, "needs Linux on x86_64"},
		{"missing flock", nil, func(t *testing.T, h *host) {
			h.env = slices.DeleteFunc(h.env, func(e string) bool { return strings.HasPrefix(e, "PATH=") })
			for _, c := range []string{"curl", "sha256sum", "uname", "id", "mkdir", "chmod", "mv", "rm", "cat"} {
				p, err := exec.LookPath(c)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(p, filepath.Join(h.bin, c)); err != nil {
					t.Fatal(err)
				}
			}
			h.env = append(h.env, "PATH="+h.bin)
		}, 1, "needs flock"},
		{"cache is a link", nil, func(t *testing.T, h *host) {
			if err := os.Symlink(t.TempDir(), filepath.Join(h.home, ".oac")); err != nil {
				t.Fatal(err)
			}
		}, 1, "must not be a symbolic link"},
		{"download running", nil, func(t *testing.T, h *host) {
			if err := os.MkdirAll(h.cache(), 0o700); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(filepath.Join(h.cache(), "download.lock"), os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
				t.Fatal(err)
			}
		}, 1, "Another node download is running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t)
			o := c.options("tok")
			if tc.edit != nil {
				tc.edit(&o)
			}
			if tc.setup != nil {
				tc.setup(t, h)
			}
			r := h.run(t, render(t, o))
			if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) {
				t.Fatalf("exit %d stderr %q, want %d and %q", r.code, r.stderr, tc.code, tc.msg)
			}
			if _, err := os.Stat(filepath.Join(h.out, "args")); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("the installer ran")
			}
			for _, name := range []string{"download.partial", c.sha} {
				if _, err := os.Lstat(filepath.Join(h.cache(), name)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s left in the cache: %v", name, err)
				}
			}
		})
	}
}

// TestCommandQuotesValues runs a command whose token and CA path hold
// single quotes and shell syntax: the installer receives them unchanged.
func TestCommandQuotesValues(t *testing.T) {
	c := startConsole(t)
	h := newHost(t)
	ca := filepath.Join(t.TempDir(), "it's a $(dir)", "ca `x`.pem")
	if err := os.MkdirAll(filepath.Dir(ca), 0o700); err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(c.s.CA.CertPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, pem, 0o600); err != nil {
		t.Fatal(err)
	}
	o := c.options(`t'o"k$(touch${IFS}pwned)'\''` + "`id`")
	o.CoreCA = ca
	r := h.run(t, render(t, o))
	if r.code != 0 {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	if got := h.read(t, "stdin"); got != o.Token+"\n" {
		t.Fatalf("token arrived as %q", got)
	}
	if got := h.read(t, "args"); !strings.Contains(got, "\n--core-ca\n"+ca+"\n") {
		t.Fatalf("CA path arrived as %q", got)
	}
	if _, err := os.Stat(filepath.Join(h.home, "pwned")); err == nil {
		t.Fatal("the token was executed")
	}
}

func TestCommandThroughSudo(t *testing.T) {
	c := startConsole(t)
	h := newHost(t)
	h.fake(t, "id", "echo 1000\n")
	// sudo records its arguments and runs the command without them.
	h.fake(t, "sudo", `printf '%s\n' "$@" > "$FAKE_OUT/sudo"
case "$1" in --preserve-env=*) shift;; esac
exec "$@"
`)
	r := h.run(t, render(t, c.options("secret-token-9")))
	if r.code != 0 {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	got := h.read(t, "sudo")
	want := "--preserve-env=http_proxy,https_proxy,no_proxy,HTTP_PROXY,HTTPS_PROXY,NO_PROXY\n" + filepath.Join(h.cache(), c.sha) + "\n--enrollment-token-stdin\n"
	if !strings.HasPrefix(got, want) {
		t.Fatalf("sudo arguments %q, want prefix %q", got, want)
	}
	if strings.Contains(got, "secret-token-9") {
		t.Fatal("the token is an argument of sudo")
	}
}

func TestCommandNormalizesProxies(t *testing.T) {
	c := startConsole(t)
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"upper case only", []string{"HTTPS_PROXY=http://user:secret@proxy.invalid:3128", "NO_PROXY=127.0.0.1,localhost"}, lines(
			"http_proxy=unset", "https_proxy=http://user:secret@proxy.invalid:3128", "no_proxy=127.0.0.1,localhost",
			"HTTP_PROXY=unset", "HTTPS_PROXY=http://user:secret@proxy.invalid:3128", "NO_PROXY=127.0.0.1,localhost")},
		{"lower case wins", []string{"https_proxy=", "HTTPS_PROXY=http://proxy.invalid:3128", "http_proxy=http://p.invalid:1", "HTTP_PROXY=http://other.invalid:2", "no_proxy=127.0.0.1"}, lines(
			"http_proxy=http://p.invalid:1", "https_proxy=", "no_proxy=127.0.0.1",
			"HTTP_PROXY=http://p.invalid:1", "HTTPS_PROXY=", "NO_PROXY=127.0.0.1")},
		{"none", nil, lines("http_proxy=unset", "https_proxy=unset", "no_proxy=unset", "HTTP_PROXY=unset", "HTTPS_PROXY=unset", "NO_PROXY=unset")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t)
			r := h.run(t, render(t, c.options("tok")), tc.env...)
			if r.code != 0 {
				t.Fatalf("exit %d stderr %q", r.code, r.stderr)
			}
			if got := h.read(t, "env"); got != tc.want {
				t.Fatalf("installer environment\n%s\nwant\n%s", got, tc.want)
			}
			if strings.Contains(r.stdout+r.stderr, "secret") {
				t.Fatal("a proxy password was printed")
			}
		})
	}
}

func TestUninstallCommand(t *testing.T) {
	c := startConsole(t)
	h := newHost(t)
	o := Options{Console: c.s.URL, InstallationID: testID, SHA256: c.sha, Uninstall: true, Force: true}
	command := strings.Replace(render(t, o), "curl -fs ", "curl -fs --cacert "+Quote(c.s.CA.CertPath)+" ", 1)
	r := h.run(t, command)
	if r.code != 0 {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	if got, want := h.read(t, "args"), lines("--uninstall", "--installation-id", testID, "--force"); got != want {
		t.Fatalf("installer arguments %q, want %q", got, want)
	}
	if got := h.read(t, "stdin"); got != "" {
		t.Fatalf("uninstall stdin %q", got)
	}
}

// TestTokenNeverInArgvOrEnvironment holds the installer while it runs and
// scans every process's argv and environment for the token.
func TestTokenNeverInArgvOrEnvironment(t *testing.T) {
	c := startConsole(t)
	h := newHost(t)
	for _, n := range []string{"ready", "go"} {
		if err := syscall.Mkfifo(filepath.Join(h.out, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Tripwires: an external printf or echo would put the token in an
	// argv too briefly for a scan to see; these record their arguments.
	for _, name := range []string{"printf", "echo"} {
		h.fake(t, name, `printf '%s\n' "$@" >> "$FAKE_OUT/tripwire"
`)
	}
	token := "tok-" + strconv.Itoa(os.Getpid()) + "-c2e1f0a9b8d7"
	cmd := h.command(t, render(t, c.options(token)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready, err := os.Open(filepath.Join(h.out, "ready")) // blocks until the installer runs
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(ready).ReadString('\n')
	ready.Close()
	if line != "running\n" {
		t.Fatalf("installer reported %q", line)
	}
	scanned := scanProc(t, token)
	g, err := os.OpenFile(filepath.Join(h.out, "go"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	g.WriteString("go\n")
	g.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if scanned < 3 {
		t.Fatalf("scanned only %d processes", scanned)
	}
	if got := h.read(t, "stdin"); got != token+"\n" {
		t.Fatalf("installer stdin %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(h.out, "tripwire")); err == nil {
		t.Fatalf("the command ran an external printf or echo with %q", b)
	}
}

// scanProc fails the test when any process's argv or environment holds
// secret, and returns how many processes it read.
func scanProc(t *testing.T, secret string) int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		for _, f := range []string{"cmdline", "environ"} {
			b, err := os.ReadFile(filepath.Join(d, f))
			if err != nil {
				continue // gone, or not ours to read
			}
			if f == "cmdline" {
				n++
			}
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s/%s holds the token", d, f)
			}
		}
	}
	return n
}
