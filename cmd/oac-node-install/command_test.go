package main

import (
	"strings"
	"testing"
)

func TestCommandRendersTheBootstrapCommand(t *testing.T) {
	const sum = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	install := []string{"command", "--token-stdin", "--console", "https://console.example.com/", "--core-url", "https://core.example.com",
		"--provider", "docker", "--installation-id", testID, "--sha256", sum}
	uninstall := []string{"command", "--uninstall", "--force", "--console", "https://console.example.com", "--installation-id", testID, "--sha256", sum}
	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
		code  int
		want  []string // in stdout, or in stderr when refused
	}{
		{"install", install, "oac_tok-123\n", exitOK, []string{
			" (umask 077\n",
			"printf '%s\\n' 'oac_tok-123' | ",
			"--enrollment-token-stdin --source-url 'https://console.example.com' --core-url 'https://core.example.com' --provider 'docker' --installation-id '" + testID + "')\n",
			"'https://console.example.com/node-install/oac-node-install'",
			sum,
		}},
		{"token with carriage return line end", install, "oac_tok-123\r\n", exitOK, []string{"printf '%s\\n' 'oac_tok-123' | "}},
		{"insecure and CA", append(append([]string{}, install...), "--allow-insecure-origin", "--core-ca", "/etc/oac/core-ca.pem"), "t\n", exitOK, []string{
			"--core-url 'https://core.example.com' --allow-insecure-origin --core-ca '/etc/oac/core-ca.pem'",
		}},
		{"uninstall", uninstall, "", exitOK, []string{"--uninstall --installation-id '" + testID + "' --force </dev/null)\n"}},
		{"neither install nor uninstall", append([]string{"command"}, install[2:]...), "", exitFailure, []string{"command: exactly one of --token-stdin"}},
		{"both", append(append([]string{}, install...), "--uninstall"), "t\n", exitFailure, []string{"command: exactly one of --token-stdin"}},
		{"no token", install, "", exitFailure, []string{"command: --token-stdin an install command needs the enrollment token"}},
		{"token with a space", install, "two words\n", exitFailure, []string{"command: --token-stdin the enrollment token holds white space or a control character"}},
		{"token too long", install, strings.Repeat("a", 5000) + "\n", exitFailure, []string{"command: --token-stdin the token is longer than 4096 characters"}},
		{"bad console", []string{"command", "--uninstall", "--console", "http://console.example.com", "--installation-id", testID, "--sha256", sum}, "", exitFailure,
			[]string{"command: --console uses plain http"}},
		{"bad digest", []string{"command", "--uninstall", "--console", "https://c.example", "--installation-id", testID, "--sha256", "x"}, "", exitFailure,
			[]string{"command: --sha256 must be 64 lowercase hex digits"}},
		{"token as argument", []string{"command", "--token", "x"}, "", exitFailure, []string{"command: unknown flag: --token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runWithInput(t, "", tc.stdin, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, errOut)
			}
			got := out
			if tc.code != exitOK {
				got = errOut
				if out != "" {
					t.Errorf("a refusal printed %q", out)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
		})
	}
}
