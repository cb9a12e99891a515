package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// completions runs the shell's completion request for args and returns the
// offered words (without their descriptions) and the directive line.
func completions(t *testing.T, hostRoot string, args ...string) (words []string, directive string) {
	t.Helper()
	code, out, errOut := runOn(t, hostRoot, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %q: exit %d, %s", args, code, errOut)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, ":") {
			directive = line
			continue
		}
		word, _, _ := strings.Cut(line, "\t")
		words = append(words, word)
	}
	return words, directive
}

func TestCompletionOfFlagValues(t *testing.T) {
	const id1, id2 = "0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c", "1c5b3d7f-4a2e-4f6b-8c8d-9e7f6a5b4c3d"
	host := t.TempDir()
	for _, p := range []string{"etc/oac-node/" + id1 + ".json", "etc/oac-node/installer.db", "etc/oac-node/" + id1 + ".env",
		"etc/oac-node/not-an-id.json"} {
		os.MkdirAll(filepath.Join(host, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(host, p), []byte("{}"), 0o644)
	}
	// An installation with a journal and no host record (interrupted early).
	os.MkdirAll(filepath.Join(host, "var/lib/oac-node-install", id2), 0o700)
	os.MkdirAll(filepath.Join(host, "var/lib/oac-node-install", "junk"), 0o700)

	for _, tc := range []struct {
		args      []string
		want      []string
		directive string
	}{
		{[]string{"--provider", ""}, []string{"docker", "microsandbox"}, ":4"},
		{[]string{"--installation-id", ""}, []string{id1, id2}, ":4"},
		{[]string{"--uninstall", "--installation-id", ""}, []string{id1, id2}, ":4"},
		{[]string{"uninstall", "--installation-id", ""}, []string{id1, id2}, ":4"},
		{[]string{"status", "--installation-id", ""}, []string{id1, id2}, ":4"},
		{[]string{"leases", "--installation-id", ""}, []string{id1, id2}, ":4"},
		{[]string{"check", "--provider", ""}, []string{"docker", "microsandbox"}, ":4"},
		{[]string{"command", "--provider", ""}, []string{"docker", "microsandbox"}, ":4"},
		{[]string{"--bundle", ""}, nil, ":16"}, // directories
	} {
		words, directive := completions(t, host, tc.args...)
		if !slices.Equal(words, tc.want) || directive != tc.directive {
			t.Errorf("%q: %q %s, want %q %s", tc.args, words, directive, tc.want, tc.directive)
		}
	}
}

// With --uninstall on the line, only the flags an uninstall accepts are
// offered (CONTRACT §10, and --json, this installer's extension); without
// it, the install's are too.
func TestCompletionOfUninstallFlags(t *testing.T) {
	words, _ := completions(t, "", "--uninstall", "--")
	for _, w := range words {
		if !slices.Contains([]string{"--installation-id", "--force", "--no-color", "--json", "--help", "--version"}, w) {
			t.Errorf("--uninstall offers %s", w)
		}
	}
	if !slices.Contains(words, "--force") || !slices.Contains(words, "--installation-id") {
		t.Errorf("--uninstall offers %q", words)
	}
	words, _ = completions(t, "", "--")
	for _, want := range []string{"--source-url", "--provider", "--uninstall", "--enrollment-token-stdin"} {
		if !slices.Contains(words, want) {
			t.Errorf("the root offers %q, lacks %s", words, want)
		}
	}
	// A subcommand's line keeps its own flags.
	words, _ = completions(t, "", "status", "--")
	if !slices.Contains(words, "--json") {
		t.Errorf("status offers %q", words)
	}
}

// TestBashCompletionWithoutThePackage sources `completion bash` in a bash
// without the bash-completion package (--norc, empty environment) and runs
// the completion function the way bash does on TAB, with COMP_WORDS,
// COMP_CWORD, COMP_LINE and COMP_POINT set: commands, flags, flag values
// (also after '='), and directories complete, and no function of the package
// is called. The command the script calls back is this test binary
// (TestCompletionHelperProcess), run through a stub on PATH.
func TestBashCompletionWithoutThePackage(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("needs bash: ", err)
	}
	code, script, errOut := runOn(t, "", "completion", "bash")
	if code != exitOK || errOut != "" {
		t.Fatalf("completion bash: exit %d, stderr %q", code, errOut)
	}
	if strings.Contains(script, "bash-completion' package") {
		t.Errorf("the script's help still asks for the bash-completion package")
	}
	dir := t.TempDir()
	scriptFile := filepath.Join(dir, "completion.bash")
	os.WriteFile(scriptFile, []byte(script), 0o644)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stub := "#!/bin/sh\nexec " + shellQuote(self) + " -test.run='^TestCompletionHelperProcess$' -- \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "oac-node-install"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "tree", "bundle-1"), 0o755)
	os.WriteFile(filepath.Join(dir, "tree", "bundle-file"), nil, 0o644)
	// words: COMP_WORDS as bash splits the line ('=' a word of its own);
	// the cursor is at the end of the last one.
	const probe = `source "$1"; shift
if declare -F _init_completion _get_comp_words_by_ref _filedir >/dev/null; then echo "the bash-completion package is loaded"; exit 1; fi
COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE="$*"; COMP_LINE=${COMP_LINE// = /=}; COMP_POINT=${#COMP_LINE}
__start_oac-node-install 2>/dev/null
printf '%s\n' "${COMPREPLY[@]}"`
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{"oac-node-install", "sta"}, []string{"status"}},
		{[]string{"oac-node-install", "--prov"}, []string{"--provider"}},
		{[]string{"oac-node-install", "--provider", "d"}, []string{"docker"}},
		{[]string{"oac-node-install", "--provider", "=", "m"}, []string{"microsandbox"}},
		{[]string{"oac-node-install", "uninstall", "--fo"}, []string{"--force"}},
		{[]string{"oac-node-install", "--bundle", filepath.Join(dir, "tree", "b")}, []string{filepath.Join(dir, "tree", "bundle-1")}},
		// A file value: nothing offered, bash's own file names complete
		// (the script registers with complete -o default).
		{[]string{"oac-node-install", "--core-ca", filepath.Join(dir, "tree", "bundle-f")}, nil},
	} {
		t.Run(strings.Join(tc.words[1:], " "), func(t *testing.T) {
			cmd := exec.Command(bash, append([]string{"--norc", "--noprofile", "-c", probe, "probe", scriptFile}, tc.words...)...)
			cmd.Env = []string{"PATH=" + dir + ":/usr/bin:/bin", "OAC_COMPLETION_HELPER=1"}
			out, err := cmd.CombinedOutput()
			got := strings.Fields(string(out))
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("COMP_WORDS %q: %v\noffered %q, want %q", tc.words, err, got, tc.want)
			}
		})
	}
}

// TestCompletionHelperProcess is the command the completion script calls
// back in TestBashCompletionWithoutThePackage: the command line after "--"
// run in process, as the installed binary would run it.
func TestCompletionHelperProcess(t *testing.T) {
	if os.Getenv("OAC_COMPLETION_HELPER") != "1" {
		return
	}
	args := os.Args
	if i := slices.Index(args, "--"); i >= 0 {
		args = args[i+1:]
	}
	c := &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	os.Exit(c.run(args))
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
