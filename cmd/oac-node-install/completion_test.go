package main

import (
	"os"
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
