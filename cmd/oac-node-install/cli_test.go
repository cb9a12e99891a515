package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/workflow"
)

// publicFlags are the flags of CONTRACT §4.4 that --help lists.
var publicFlags = []string{
	"--source-url", "--bundle", "--core-url", "--allow-insecure-origin", "--core-ca", "--provider",
	"--installation-id", "--enrollment-token-stdin", "--uninstall", "--force", "--no-color",
}

// hiddenFlags are accepted (or, for --update, refused) but never listed;
// --host-root exists only in test builds.
var hiddenFlags = []string{"--generation-action", "--generation", "--specification-digest", "--update", "--host-root"}

func TestHelpListsTheContractFlags(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {}} {
		t.Run(strings.Join(append([]string{"args"}, args...), " "), func(t *testing.T) {
			code, out, errOut := runOn(t, "", args...)
			if code != exitOK || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			for _, f := range publicFlags {
				if !regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(f) + `\b`).MatchString(out) {
					t.Errorf("help does not list %s", f)
				}
			}
			for _, f := range hiddenFlags {
				if regexp.MustCompile(regexp.QuoteMeta(f) + `\b[^-]`).MatchString(out) {
					t.Errorf("help shows the hidden flag %s", f)
				}
			}
			for _, cmd := range []string{"status", "leases", "command", "version", "completion", "help", "uninstall"} {
				if !regexp.MustCompile(`(?m)^  ` + cmd + `\s+\S`).MatchString(out) {
					t.Errorf("help does not list the command %s with its summary", cmd)
				}
			}
			for _, example := range []string{
				"--enrollment-token-stdin \\\n      --source-url https://console.example.com --core-url https://core.example.com \\\n      --provider docker --installation-id",
				"# Rerun", "--uninstall --installation-id", "oac-node-install status", "oac-node-install leases",
			} {
				if !strings.Contains(out, example) {
					t.Errorf("help lacks the example %q", example)
				}
			}
		})
	}
}

func TestEverySubcommandHasItsOwnHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"status", "--help"}, []string{"oac-node-install status [flags]", "--installation-id", "--json", "Exit codes", "  2  something needs attention"}},
		{[]string{"help", "status"}, []string{"oac-node-install status [flags]"}},
		{[]string{"status", "-h"}, []string{"oac-node-install status [flags]"}},
		{[]string{"leases", "--help"}, []string{"oac-node-install leases [flags]", "--installation-id", "--json"}},
		{[]string{"help", "leases"}, []string{"oac-node-install leases [flags]"}},
		{[]string{"version", "--help"}, []string{"oac-node-install version [flags]"}},
		{[]string{"completion", "--help"}, []string{"bash", "zsh", "fish"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runOn(t, "", tc.args...)
			if code != exitOK || errOut != "" {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "--source-url") {
				t.Errorf("a subcommand's help lists the installer's flags:\n%s", out)
			}
		})
	}
}

func TestEachCommandHasItsFailurePrefix(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		prefix string
		want   string
	}{
		{"install", []string{"--source-url", "https://c.example", "--core-url", "https://k.example", "--installation-id", "X"}, "Installation failed: ", "canonical UUID"},
		{"install unknown flag", []string{"--sourceurl", "https://c.example"}, "Installation failed: ", "unknown flag: --sourceurl"},
		{"uninstall", []string{"--uninstall", "--installation-id", testID, "--provider", "docker"}, "Uninstall failed: ", "accepts only"},
		{"uninstall unknown flag", []string{"--uninstall", "--bogus"}, "Uninstall failed: ", "unknown flag: --bogus"},
		{"helper", []string{"--generation-action", "prepare", "--generation", "0", "--specification-digest", testDigest, "--installation-id", testID}, "Generation helper failed: ", "--generation must be"},
		{"status", []string{"status", "--installation-id", "X"}, "status: ", "canonical UUID"},
		{"status argument", []string{"status", "now"}, "status: ", `unexpected argument "now"`},
		{"status unknown flag", []string{"status", "--source-url", "x"}, "status: ", "unknown flag: --source-url"},
		{"leases", []string{"leases", "--installation-id", "X"}, "leases: ", "canonical UUID"},
		{"version", []string{"version", "now"}, "version: ", "unexpected argument"},
		{"unknown command", []string{"lease"}, "oac-node-install: ", "did you mean leases?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runOn(t, "", tc.args...)
			if code != exitFailure {
				t.Errorf("exit %d, want %d", code, exitFailure)
			}
			if out != "" {
				t.Errorf("stdout %q", out)
			}
			if !strings.HasPrefix(errOut, tc.prefix) || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "--help' for usage.") {
				t.Errorf("stderr %q, want prefix %q and %q", errOut, tc.prefix, tc.want)
			}
			changing := tc.prefix == "Installation failed: " || tc.prefix == "Uninstall failed: " || tc.prefix == "Generation helper failed: "
			if changing != strings.Contains(errOut, "Nothing was changed.") {
				t.Errorf("stderr %q: a refusal of a command that changes the host says \"Nothing was changed.\", no other", errOut)
			}
		})
	}
}

// TestCommandLineMistakes: a misspelt command gets a suggestion, a help
// topic that names no command fails, a flag of status and leases given
// before them names where it goes, and status and leases take --no-color
// as the root does.
func TestCommandLineMistakes(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // a part of it
		stderr string // all of it
	}{
		{"misspelt command", []string{"stauts"}, exitFailure, "",
			"oac-node-install: unknown command \"stauts\"; did you mean status?\nRun 'oac-node-install --help' for usage.\n"},
		{"unknown help topic", []string{"help", "foo"}, exitFailure, "",
			"oac-node-install help: unknown help topic \"foo\"\nRun 'oac-node-install help --help' for usage.\n"},
		{"misspelt help topic", []string{"help", "stauts"}, exitFailure, "",
			"oac-node-install help: unknown help topic \"stauts\"; did you mean oac-node-install help status?\nRun 'oac-node-install help --help' for usage.\n"},
		{"help of a command's argument", []string{"help", "status", "foo"}, exitFailure, "",
			"oac-node-install help: unknown help topic \"status foo\"\nRun 'oac-node-install help --help' for usage.\n"},
		{"help of a command", []string{"help", "leases"}, exitOK, "oac-node-install leases [flags]", ""},
		// --json is also the root command's (install's and uninstall's
		// result): given before status or leases, it is theirs.
		{"--json before status", []string{"--json", "status"}, exitOK, `"installations": []`, ""},
		{"--json before leases", []string{"--json", "leases"}, exitOK, `"nodes": []`, ""},
		{"a command's flag before it", []string{"--sha256", "command"}, exitFailure, "",
			"oac-node-install: unknown flag: --sha256 (it is a flag of command: oac-node-install command --sha256)\nRun 'oac-node-install --help' for usage.\n"},
		{"status --no-color", []string{"status", "--no-color"}, exitOK, "No installation on this host.\n", ""},
		{"leases --no-color", []string{"leases", "--no-color", "--json"}, exitOK, `"nodes": []`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useSystemd(t, nil)
			host := t.TempDir()
			os.MkdirAll(filepath.Join(host, "etc"), 0o755)
			os.WriteFile(filepath.Join(host, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
			args := tc.args
			if tc.code == exitOK && args[0] != "help" && os.Geteuid() != 0 {
				t.Skip("needs root: status and leases refuse to run without it")
			}
			code, out, errOut := runOn(t, host, args...)
			if code != tc.code || errOut != tc.stderr || !strings.Contains(out, tc.stdout) || (tc.stdout == "" && out != "") {
				t.Errorf("exit %d, want %d\nstdout: %q\nwant:   %q\nstderr: %q\nwant:   %q", code, tc.code, out, tc.stdout, errOut, tc.stderr)
			}
			if strings.HasPrefix(args[0], "--") || args[0] == "status" || args[0] == "leases" {
				if v := os.Getenv("NO_COLOR"); (v == "1") != slices.Contains(args, "--no-color") {
					t.Errorf("NO_COLOR is %q after %v", v, args)
				}
			}
		})
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errOut := runOn(t, "", args...)
		if code != exitOK || errOut != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
		for _, w := range []string{"oac-node-install " + releaseVersion() + "\n", "\ncommit: ", "\nbuild:  " + workflow.Version + "\n", "\ngo:     " + runtime.Version() + "\n"} {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output %q lacks %q", args, out, w)
			}
		}
	}
}

// TestVersionNamesTheReleaseAndCommit builds the command with the flags
// make build passes: version names a release (the newest v<semver> tag, or
// a pseudo-version v0.0.0-<UTC time>-<12 hex digits of the commit>), the
// full source commit and the build the journals record.
func TestVersionNamesTheReleaseAndCommit(t *testing.T) {
	gotool := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, tool := range []string{"make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("needs make and git to read the Makefile's version stamp: ", err)
		}
	}
	commit, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skip("needs the source's git history: ", err)
	}
	plan, err := exec.Command("make", "-n", "-C", "../..", "build").Output()
	if err != nil {
		t.Fatalf("make -n build: %v", err)
	}
	m := regexp.MustCompile(`-ldflags '([^']*)'`).FindSubmatch(plan)
	if m == nil {
		t.Fatalf("make -n build passes no -ldflags:\n%s", plan)
	}
	ldflags := string(m[1])
	bin := filepath.Join(t.TempDir(), "oac-node-install")
	build := exec.Command(gotool, "build", "-ldflags", ldflags, "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags %q: %v\n%s", ldflags, err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	sha := strings.TrimSpace(string(commit))
	release := `v\d+\.\d+\.\d+(-\d+-g[0-9a-f]+)?(-dirty)?|v0\.0\.0-\d{14}-` + sha[:12]
	want := regexp.MustCompile(`^oac-node-install (` + release + `)\ncommit: ` + sha + `\nbuild:  \S+\ngo:     go\S+\n$`)
	if !want.Match(out) {
		t.Errorf("version printed:\n%s\nwant a release, commit %s and the build", out, sha)
	}
}

func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := runOn(t, "", "completion", shell)
		if code != exitOK || errOut != "" || !strings.Contains(out, "oac-node-install") {
			t.Errorf("completion %s: exit %d, stderr %q, %d bytes", shell, code, errOut, len(out))
		}
	}
}

// TestHostRootOnlyInTestBuilds builds the command as make build does and
// as the tests' tag builds it: the shipped binary refuses --host-root (it
// would decide which etc/passwd root reads); a testhost build takes it.
func TestHostRootOnlyInTestBuilds(t *testing.T) {
	gotool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gotool); err != nil {
		t.Skip("needs the go tool to build the command: ", err)
	}
	dir := t.TempDir()
	host := t.TempDir()
	os.MkdirAll(filepath.Join(host, "etc"), 0o755)
	os.WriteFile(filepath.Join(host, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	for _, tc := range []struct {
		name, tags string
		code       int
		want       string
	}{
		{"shipped", "", exitFailure, "status: unknown flag: --host-root"},
		{"testhost", "testhost", exitOK, "No installation on this host."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(dir, tc.name)
			build := exec.Command(gotool, "build", "-tags", tc.tags, "-o", bin, ".")
			build.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build -tags %q: %v\n%s", tc.tags, err, out)
			}
			out, err := exec.Command(bin, "status", "--host-root", host).CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(string(out), tc.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", code, tc.code, tc.want, out)
			}
		})
	}
}

// TestNoColorAndInsecureWarning: --no-color sets NO_COLOR=1 for the run,
// and an origin accepted only through --allow-insecure-origin is named in a
// warning on stderr.
func TestNoColorAndInsecureWarning(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	os.Unsetenv("NO_COLOR")
	runOn(t, t.TempDir(), "--uninstall", "--no-color", "--installation-id", testID)
	if v, ok := os.LookupEnv("NO_COLOR"); !ok || v != "1" {
		t.Errorf("after --no-color NO_COLOR is %q (set: %v), want 1", v, ok)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: install checks for root before it warns")
	}
	// --bundle is refused right after the warning, before anything is read
	// or contacted.
	code, _, errOut := runOn(t, t.TempDir(), "--bundle", "/nonexistent/oac-bundle", "--core-url", "http://10.0.0.5:9000",
		"--allow-insecure-origin", "--installation-id", testID)
	if code != exitFailure || !strings.Contains(errOut, "Warning: --core-url uses plain http to a host that is not loopback") || !strings.Contains(errOut, "Nothing was changed.") {
		t.Errorf("exit %d, stderr %q: want the warning for --core-url, then the refusal", code, errOut)
	}
}
