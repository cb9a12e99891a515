package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// parseInstallerArgs parses args with the root command's flag definitions
// and validation, as the root command does.
func parseInstallerArgs(args []string) (*installerFlags, error) {
	f := &installerFlags{}
	fs := pflag.NewFlagSet("oac-node-install", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.bind(fs)
	if err := fs.Parse(args); err != nil {
		return nil, usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q", fs.Arg(0))
	}
	return f, f.validate(fs)
}

// TestInstallerFlags checks the root command's flags against CONTRACT §4.4
// and §10: every flag, the mutual exclusions, the origin rules, the
// canonical UUID, the generation range and the digest form.
func TestInstallerFlags(t *testing.T) {
	id := []string{"--installation-id", testID}
	install := func(extra ...string) []string {
		return append([]string{"--source-url", "https://console.example.com", "--core-url", "https://core.example.com", "--installation-id", testID}, extra...)
	}
	origins := func(source, core string, extra ...string) []string {
		return append([]string{"--source-url", source, "--core-url", core, "--installation-id", testID}, extra...)
	}
	helper := func(action, gen, digest string, extra ...string) []string {
		return append([]string{"--generation-action", action, "--generation", gen, "--specification-digest", digest, "--installation-id", testID}, extra...)
	}
	type want struct {
		mode      installerMode
		source    string
		core      string
		insecure  int
		gen       int64
		tokenFlag bool
	}
	for _, tc := range []struct {
		name string
		args []string
		want *want  // nil: refused
		err  string // part of the refusal
	}{
		// Install.
		{"generated command", install("--enrollment-token-stdin", "--provider", "docker"), &want{mode: modeInstall, source: "https://console.example.com", core: "https://core.example.com", tokenFlag: true}, ""},
		{"flag=value spelling", []string{"--source-url=https://console.example.com", "--core-url=https://core.example.com", "--installation-id=" + testID}, &want{source: "https://console.example.com", core: "https://core.example.com"}, ""},
		{"rerun without token", install(), &want{source: "https://console.example.com", core: "https://core.example.com"}, ""},
		{"microsandbox", install("--provider", "microsandbox"), &want{source: "https://console.example.com", core: "https://core.example.com"}, ""},
		{"unknown provider", install("--provider", "podman"), nil, "--provider must be docker or microsandbox"},
		{"core ca absolute", install("--core-ca", "/etc/oac/ca.pem"), &want{source: "https://console.example.com", core: "https://core.example.com"}, ""},
		{"core ca relative", install("--core-ca", "ca.pem"), nil, "--core-ca must be an absolute path"},
		{"no color", install("--no-color"), &want{source: "https://console.example.com", core: "https://core.example.com"}, ""},
		{"bundle", []string{"--bundle", "/opt/oac-bundle", "--core-url", "https://core.example.com", "--installation-id", testID}, &want{core: "https://core.example.com"}, ""},
		{"bundle relative", []string{"--bundle", "oac-bundle", "--core-url", "https://core.example.com", "--installation-id", testID}, nil, "--bundle must be an absolute directory"},
		{"source and bundle", install("--bundle", "/opt/oac-bundle"), nil, "exactly one of --source-url and --bundle"},
		{"neither source nor bundle", []string{"--core-url", "https://core.example.com", "--installation-id", testID}, nil, "exactly one of --source-url and --bundle"},
		{"no core url", []string{"--source-url", "https://console.example.com", "--installation-id", testID}, nil, "--core-url is required"},
		{"no installation id", []string{"--source-url", "https://console.example.com", "--core-url", "https://core.example.com"}, nil, "--installation-id is required"},
		{"force without uninstall", install("--force"), nil, "--force is only accepted with --uninstall"},
		{"generation without action", install("--generation", "3"), nil, "--generation is only accepted with --generation-action"},
		{"digest without action", install("--specification-digest", testDigest), nil, "--specification-digest is only accepted with --generation-action"},
		{"update refused", install("--update"), nil, "--update is not supported"},
		{"update refused with uninstall", append([]string{"--uninstall", "--update"}, id...), nil, "--update is not supported"},
		{"unknown flag", install("--token", "x"), nil, "unknown flag: --token"},
		{"single dash long flag", []string{"-source-url", "https://console.example.com"}, nil, "unknown shorthand flag"},
		{"argument", install("now"), nil, `unexpected argument "now"`},
		{"missing value", []string{"--installation-id"}, nil, "flag needs an argument"},

		// Installation ids.
		{"id uppercase", origins("https://c.example", "https://k.example", "--installation-id", strings.ToUpper(testID)), nil, `--installation-id "` + strings.ToUpper(testID) + `": not a canonical UUID (lowercase, 8-4-4-4-12, like 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c)`},
		{"id braces", origins("https://c.example", "https://k.example", "--installation-id", "{"+testID+"}"), nil, "canonical UUID"},
		{"id urn", origins("https://c.example", "https://k.example", "--installation-id", "urn:uuid:"+testID), nil, "canonical UUID"},
		{"id without hyphens", origins("https://c.example", "https://k.example", "--installation-id", strings.ReplaceAll(testID, "-", "")), nil, "canonical UUID"},
		{"id short", origins("https://c.example", "https://k.example", "--installation-id", testID[:35]), nil, "canonical UUID"},
		{"id with escapes", origins("https://c.example", "https://k.example", "--installation-id", "\x1b]0;x\x07"+testID[8:]), nil, `--installation-id "?]0;x?` + testID[8:] + `": not a canonical UUID`},
		{"id not UTF-8", origins("https://c.example", "https://k.example", "--installation-id", "\xff\xfe"+testID[2:]), nil, "--installation-id is not valid UTF-8"},
		{"id very long", origins("https://c.example", "https://k.example", "--installation-id", testID+strings.Repeat("a", 1<<20)), nil, `--installation-id "` + testID + strings.Repeat("a", 64-len(testID)) + `…": not a canonical UUID`},
		{"id with dot dot", origins("https://c.example", "https://k.example", "--installation-id", "../../../../etc/passwd-3f1d-4e5a-9b7c"), nil, "canonical UUID"},

		// Origins.
		{"trailing slash stripped", origins("https://console.example.com/", "https://core.example.com:8443/"), &want{source: "https://console.example.com", core: "https://core.example.com:8443"}, ""},
		{"scheme case", origins("HTTPS://console.example.com", "https://core.example.com"), &want{source: "https://console.example.com", core: "https://core.example.com"}, ""},
		{"http localhost", origins("http://localhost:8080", "http://127.0.0.1:9000"), &want{source: "http://localhost:8080", core: "http://127.0.0.1:9000"}, ""},
		{"http loopback range and v6", origins("http://127.1.2.3", "http://[::1]:8443"), &want{source: "http://127.1.2.3", core: "http://[::1]:8443"}, ""},
		{"http remote refused", origins("http://console.example.com", "https://core.example.com"), nil, "plain http to a host that is not loopback"},
		{"http remote core refused", origins("https://console.example.com", "http://10.0.0.5"), nil, "--core-url uses plain http"},
		{"http remote allowed", origins("http://console.example.com", "http://10.0.0.5", "--allow-insecure-origin"), &want{source: "http://console.example.com", core: "http://10.0.0.5", insecure: 2}, ""},
		{"localhost lookalike", origins("http://localhost.example.com", "https://k.example"), nil, "plain http"},
		{"userinfo", origins("https://user:pw@console.example.com", "https://k.example"), nil, "must not contain credentials"},
		{"user only", origins("https://k.example", "https://user@core.example.com"), nil, "must not contain credentials"},
		{"path", origins("https://console.example.com/oac", "https://k.example"), nil, "without a path"},
		{"double slash", origins("https://console.example.com//", "https://k.example"), nil, "without a path"},
		{"query", origins("https://console.example.com/?a=b", "https://k.example"), nil, "no spaces, query, fragment or backslash"},
		{"empty query", origins("https://console.example.com?", "https://k.example"), nil, "no spaces, query, fragment or backslash"},
		{"fragment", origins("https://console.example.com#x", "https://k.example"), nil, "no spaces, query, fragment or backslash"},
		{"backslash", origins(`https://console.example.com\@evil.example`, "https://k.example"), nil, "no spaces, query, fragment or backslash"},
		{"space", origins("https://console.example.com ", "https://k.example"), nil, "no spaces"},
		{"tab", origins("https://console\t.example.com", "https://k.example"), nil, "no spaces"},
		{"newline", origins("https://console.example.com\n", "https://k.example"), nil, "no spaces"},
		{"no-break space", origins("https://console.example.com\u00a0", "https://k.example"), nil, "no spaces"},
		{"ftp", origins("ftp://console.example.com", "https://k.example"), nil, "http or https origin"},
		{"no scheme", origins("console.example.com", "https://k.example"), nil, "http or https origin"},
		{"no host", origins("https://", "https://k.example"), nil, "http or https origin"},
		{"port only", origins("https://:443", "https://k.example"), nil, "http or https origin"},
		{"opaque", origins("https:console.example.com", "https://k.example"), nil, "http or https origin"},
		{"userinfo and fragment", origins("https://user:pw@console.example.com#frag", "https://k.example"), nil, "no spaces, query, fragment"},
		{"userinfo with a space", origins("https://user:p w@console.example.com", "https://k.example"), nil, "no spaces"},
		{"port out of range", origins("https://console.example.com:70000", "https://k.example"), nil, "port from 1 to 65535"},
		{"port zero", origins("https://console.example.com:0", "https://k.example"), nil, "port from 1 to 65535"},
		{"label too long", origins("https://"+strings.Repeat("a", 64)+".example", "https://k.example"), nil, "DNS name"},
		{"international name", origins("https://bücher.example", "https://k.example"), nil, "punycode"},
		{"punycode name", origins("https://xn--bcher-kva.example", "https://k.example"), &want{source: "https://xn--bcher-kva.example", core: "https://k.example"}, ""},
		{"underscore and final dot", origins("https://oac_console.internal.", "https://k.example"), &want{source: "https://oac_console.internal.", core: "https://k.example"}, ""},
		{"host not UTF-8", origins("https://console\xff.example.com", "https://k.example"), nil, "--source-url is not valid UTF-8"},
		{"escape in host", origins("https://console\x1b[2J.example.com", "https://k.example"), nil, "origin"},
		{"very long url", origins("https://"+strings.Repeat("a", 1<<20)+".example", "https://k.example"), nil, "DNS name"},
		{"bundle with dot dot", []string{"--bundle", "/opt/../etc", "--core-url", "https://core.example.com", "--installation-id", testID}, nil, "--bundle"},
		{"bundle with dot dot at the end", []string{"--bundle", "/opt/oac-bundle/..", "--core-url", "https://core.example.com", "--installation-id", testID}, nil, "--bundle"},
		{"core ca with dot dot", install("--core-ca", "/etc/oac/../shadow"), nil, "--core-ca"},
		{"bundle not UTF-8", []string{"--bundle", "/opt/\xff", "--core-url", "https://core.example.com", "--installation-id", testID}, nil, "--bundle is not valid UTF-8"},
		{"bundle with a newline", []string{"--bundle", "/opt/b\nnext: sudo sh", "--core-url", "https://core.example.com", "--installation-id", testID}, nil, "control character"},
		{"bundle trailing slash", []string{"--bundle", "/opt/oac-bundle/", "--core-url", "https://core.example.com", "--installation-id", testID}, &want{core: "https://core.example.com"}, ""},

		// Uninstall.
		{"uninstall", append([]string{"--uninstall"}, id...), &want{mode: modeUninstall}, ""},
		{"uninstall force no-color", append([]string{"--uninstall", "--force", "--no-color"}, id...), &want{mode: modeUninstall}, ""},
		{"uninstall without id", []string{"--uninstall"}, nil, "--installation-id is required"},
		{"uninstall with source", append([]string{"--uninstall", "--source-url", "https://c.example"}, id...), nil, "--uninstall accepts only"},
		{"uninstall with core", append([]string{"--uninstall", "--core-url", "https://k.example"}, id...), nil, "--uninstall accepts only"},
		{"uninstall with token", append([]string{"--uninstall", "--enrollment-token-stdin"}, id...), nil, "--uninstall accepts only"},
		{"uninstall with provider", append([]string{"--uninstall", "--provider", "docker"}, id...), nil, "--uninstall accepts only"},
		{"uninstall with bundle", append([]string{"--uninstall", "--bundle", "/b"}, id...), nil, "--uninstall accepts only"},
		{"uninstall with core ca", append([]string{"--uninstall", "--core-ca", "/ca.pem"}, id...), nil, "--uninstall accepts only"},
		{"uninstall with insecure", append([]string{"--uninstall", "--allow-insecure-origin"}, id...), nil, "--uninstall accepts only"},

		// Generation helper.
		{"prepare", helper("prepare", "1", testDigest), &want{mode: modeHelper, gen: 1}, ""},
		{"repair", helper("repair", "42", testDigest), &want{mode: modeHelper, gen: 42}, ""},
		{"collect with the node's insecure-origin policy", append(helper("collect", "7", testDigest), "--allow-insecure-origin"), &want{mode: modeHelper, gen: 7}, ""},
		{"collect largest generation", helper("collect", "9223372036854775807", testDigest), &want{mode: modeHelper, gen: 1<<63 - 1}, ""},
		{"unknown action", helper("install", "1", testDigest), nil, "--generation-action must be prepare, repair or collect"},
		{"generation zero", helper("prepare", "0", testDigest), nil, "--generation must be an integer from 1 to 2^63-1"},
		{"generation negative", helper("prepare", "-1", testDigest), nil, "--generation must be"},
		{"generation overflow", helper("prepare", "9223372036854775808", testDigest), nil, "--generation must be"},
		{"generation leading zero", helper("prepare", "01", testDigest), nil, "--generation must be"},
		{"generation plus", helper("prepare", "+1", testDigest), nil, "--generation must be"},
		{"generation fraction", helper("prepare", "1.0", testDigest), nil, "--generation must be"},
		{"generation missing", []string{"--generation-action", "prepare", "--specification-digest", testDigest, "--installation-id", testID}, nil, "--generation must be"},
		{"digest uppercase", helper("prepare", "1", strings.ToUpper(testDigest)), nil, "--specification-digest must be 64 lowercase hex digits"},
		{"digest short", helper("prepare", "1", testDigest[:63]), nil, "--specification-digest must be"},
		{"digest long", helper("prepare", "1", testDigest+"a"), nil, "--specification-digest must be"},
		{"digest not hex", helper("prepare", "1", strings.Repeat("g", 64)), nil, "--specification-digest must be"},
		{"helper with source", helper("prepare", "1", testDigest, "--source-url", "https://c.example"), nil, "--source-url cannot be used with --generation-action"},
		{"helper with uninstall", helper("prepare", "1", testDigest, "--uninstall"), nil, "--uninstall cannot be used with --generation-action"},
		{"helper with force", helper("prepare", "1", testDigest, "--force"), nil, "--force is only accepted with --uninstall"},
		{"helper bad id", []string{"--generation-action", "prepare", "--generation", "1", "--specification-digest", testDigest, "--installation-id", "x"}, nil, "canonical UUID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseInstallerArgs(tc.args)
			if tc.want == nil {
				var ue *usageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want a usage error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			w := tc.want
			if f.mode() != w.mode || f.sourceURL != w.source || f.coreURL != w.core || len(f.insecure) != w.insecure ||
				f.generation != w.gen || f.tokenStdin != w.tokenFlag || f.installationID != testID {
				t.Errorf("parsed %+v, want %+v", f, w)
			}
		})
	}
}

// TestRefusalsChangeNothing runs refused command lines through the whole
// command: each exits 1 with the mode's prefix and "Nothing was changed.",
// and writes nothing below the host root.
func TestRefusalsChangeNothing(t *testing.T) {
	host := t.TempDir()
	for _, args := range [][]string{
		{"--source-url", "http://console.example.com", "--core-url", "https://k.example", "--installation-id", testID},
		{"--uninstall", "--force", "--provider", "docker", "--installation-id", testID},
		{"--update", "--installation-id", testID},
		{"--source-url", "https://c.example", "--core-url", "https://k.example", "--installation-id", "\x1b[2J\x9b1m" + testID},
		{"--source-url", "https://c\xff.example", "--core-url", "https://k.example", "--installation-id", testID},
		{"--bundle", "/opt/../etc\x1b]0;x\x07", "--core-url", "https://k.example", "--installation-id", testID},
		{"--source-url", "https://" + strings.Repeat("a", 1<<20), "--core-url", "https://k.example", "--installation-id", testID},
		{"--uninstall", "--installation-id", strings.ToUpper(testID)},
		{"--source-url", "https://c.example", "--token\x1b[2J\nnext: sudo sh", "x"},
	} {
		code, _, errOut := runOn(t, host, args...)
		if first, _, _ := strings.Cut(errOut, "\n"); code != exitFailure || !strings.HasSuffix(first, "Nothing was changed.") {
			t.Errorf("%.200q: exit %d, stderr %.300q", args, code, errOut)
		}
		assertNoTerminalControls(t, "a refusal", strings.TrimSuffix(errOut, "\n"))
		if len(errOut) > 4096 {
			t.Errorf("a refusal of %d bytes echoes its argument", len(errOut))
		}
	}
	// An unknown command is quoted, not printed raw.
	if _, _, errOut := runOn(t, host, "lease\x1b[2J\r\nnext: sudo sh"); strings.ContainsAny(errOut, "\x1b\r") || !strings.Contains(errOut, "unknown command") {
		t.Errorf("the unknown command is printed raw: %q", errOut)
	}
	if entries, _ := readDirNames(host); len(entries) != 0 {
		t.Errorf("the refusals created %v", entries)
	}
}
