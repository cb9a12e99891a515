package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMisspeltFlagsGetSuggestions: an unknown flag close to one valid for
// the command line's mode (an edit distance of two, or a prefix) is named
// with it, and a refusal of a command that changes the host still ends
// with "Nothing was changed.".
func TestMisspeltFlagsGetSuggestions(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // the first line of stderr
	}{
		{"install", []string{"--instalation-id", testID}, "Installation failed: unknown flag: --instalation-id (did you mean --installation-id?). Nothing was changed."},
		{"install prefix", []string{"--enrollment-token", "--installation-id", testID}, "Installation failed: unknown flag: --enrollment-token (did you mean --enrollment-token-stdin?). Nothing was changed."},
		{"install, uninstall's flag", []string{"--uninstal", "--installation-id", testID}, "Installation failed: unknown flag: --uninstal (did you mean --uninstall?). Nothing was changed."},
		{"install with a value", []string{"--core-rul=https://k.example"}, "Installation failed: unknown flag: --core-rul (did you mean --core-url?). Nothing was changed."},
		{"uninstall", []string{"--uninstall", "--froce", "--installation-id", testID}, "Uninstall failed: unknown flag: --froce (did you mean --force?). Nothing was changed."},
		// Only --uninstall's flags are suggested after --uninstall.
		{"uninstall, install's flag", []string{"--uninstall", "--core-rul", "x"}, "Uninstall failed: unknown flag: --core-rul. Nothing was changed."},
		{"uninstall command", []string{"uninstall", "--instalation-id", testID}, "Uninstall failed: unknown flag: --instalation-id (did you mean --installation-id?). Nothing was changed."},
		{"status", []string{"status", "--jsno"}, "status: unknown flag: --jsno (did you mean --json?)"},
		{"leases", []string{"leases", "--installation"}, "leases: unknown flag: --installation (did you mean --installation-id?)"},
		{"nothing close", []string{"--frobnicate"}, "Installation failed: unknown flag: --frobnicate. Nothing was changed."},
		// A flag of a subcommand still names the subcommand.
		{"a command's flag", []string{"--sha256", "command"}, "oac-node-install: unknown flag: --sha256 (it is a flag of command: oac-node-install command --sha256)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runOn(t, t.TempDir(), tc.args...)
			first, _, _ := strings.Cut(errOut, "\n")
			if code != exitFailure || out != "" || first != tc.want {
				t.Errorf("exit %d, stdout %q\nstderr: %q\nwant:   %q", code, out, first, tc.want)
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"force", "froce", 2}, {"instalation-id", "installation-id", 1}, {"json", "", 4}, {"kitten", "sitting", 3}} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}

// TestUninstallCommandIsTheUninstallFlag: `uninstall` takes --uninstall's
// flags and answers each command line as --uninstall does: the same exit
// code, standard output (the --json result too) and standard error, the
// --help pointer aside.
func TestUninstallCommandIsTheUninstallFlag(t *testing.T) {
	useSystemd(t, nil)
	host := t.TempDir()
	os.MkdirAll(filepath.Join(host, "etc"), 0o755)
	os.WriteFile(filepath.Join(host, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	for _, args := range [][]string{
		{"--installation-id", testID},
		{"--installation-id", testID, "--force", "--no-color"},
		{"--installation-id", testID, "--json"},
		{"--installation-id", "X"},
		{"--installation-id", "X", "--json"},
		{},
		{"--force"},
	} {
		t.Run(strings.Join(append([]string{"args"}, args...), " "), func(t *testing.T) {
			wantCode, wantOut, wantErr := runOn(t, host, append([]string{"--uninstall"}, args...)...)
			code, out, errOut := runOn(t, host, append([]string{"uninstall"}, args...)...)
			errOut = strings.ReplaceAll(errOut, "oac-node-install uninstall --help", "oac-node-install --help")
			if code != wantCode || out != wantOut || errOut != wantErr {
				t.Errorf("uninstall: exit %d, --uninstall: exit %d\nstdout:   %q\nwant:     %q\nstderr:   %q\nwant:     %q", code, wantCode, out, wantOut, errOut, wantErr)
			}
			if !strings.HasPrefix(errOut, "Uninstall failed: ") || !strings.Contains(errOut, "Nothing was changed.") {
				t.Errorf("stderr %q: want the uninstall refusal", errOut)
			}
		})
	}
	code, out, _ := runOn(t, "", "uninstall", "--help")
	for _, w := range []string{"--installation-id", "--force", "--no-color", "--json"} {
		if code != exitOK || !strings.Contains(out, w) {
			t.Errorf("uninstall --help (exit %d) lacks %s:\n%s", code, w, out)
		}
	}
	if strings.Contains(out, "--source-url") || strings.Contains(out, "--provider") {
		t.Errorf("uninstall --help lists install's flags:\n%s", out)
	}
}
