package systemd

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const testID = "0f6e8c2a-3b1d-4e5f-9a7b-1c2d3e4f5a6b"

func testUnit(provider, root string) Unit {
	return Unit{InstallationID: testID, Provider: provider, NodeRoot: root}
}

// oddRoot has the characters systemd accepts in an executable's path that
// the escaping rules are about: spaces, %, a dollar sign and a semicolon.
// Quotes and backslashes are escaped too (TestQuoteExecArg), but systemd
// refuses them in an executable's path, so Validate refuses such a root.
const oddRoot = `/srv/odd dir/100%/$HOME;x/%n`

func TestUnitGolden(t *testing.T) {
	for _, tc := range []struct {
		name, golden string
		unit         Unit
	}{
		{"docker", "docker.service", testUnit("docker", "/var/lib/oac-node/.oac/nodes/"+testID)},
		{"microsandbox", "microsandbox.service", testUnit("microsandbox", "/var/lib/oac-node/.oac/nodes/"+testID)},
		{"odd paths", "odd.service", testUnit("docker", oddRoot)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.unit.Render()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("unit text differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
			}
		})
	}
}

func TestUnitOddPathEscaping(t *testing.T) {
	text, err := testUnit("docker", oddRoot).Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`ExecStart=:"/srv/odd dir/100%%/$HOME;x/%%n/native/bin/oac-node" run --config "/srv/odd dir/100%%/$HOME;x/%%n/provider.json" --state-dir "/srv/odd dir/100%%/$HOME;x/%%n/state/node"` + "\n",
		`WorkingDirectory=/srv/odd dir/100%%/$HOME;x/%%n` + "\n",
		"User=oac-node\nEnvironmentFile=-/etc/oac-node/" + testID + ".env\n",
	} {
		if !strings.Contains(string(text), want) {
			t.Errorf("unit lacks %q:\n%s", want, text)
		}
	}
}

func TestUnitRefusesWhatItCannotRepresent(t *testing.T) {
	good := "/var/lib/oac-node/.oac/nodes/" + testID
	for _, tc := range []struct {
		name string
		unit Unit
	}{
		{"newline in root", testUnit("docker", good+"\nExecStartPre=/bin/sh")},
		{"NUL in root", testUnit("docker", good+"\x00x")},
		{"carriage return", testUnit("docker", "/a\rb")},
		{"tab", testUnit("docker", "/a\tb")},
		{"DEL", testUnit("docker", "/a\x7fb")},
		{"C1 control", testUnit("docker", "/a\u0085b")},
		{"invalid UTF-8", testUnit("docker", "/a\xffb")},
		{"relative root", testUnit("docker", "var/lib/oac-node")},
		{"empty root", testUnit("docker", "")},
		{"unclean root", testUnit("docker", "/var/lib/../lib/oac-node")},
		{"trailing slash", testUnit("docker", "/var/lib/oac-node/")},
		{"trailing backslash", testUnit("docker", `/var/lib/oac-node\`)},
		{"trailing space", testUnit("docker", "/var/lib/oac-node ")},
		{"long component", testUnit("docker", "/"+strings.Repeat("a", 256))},
		{"too long", testUnit("docker", strings.Repeat("/aaaaaaa", 512))},
		{"double quote", testUnit("docker", `/srv/"q"`)},
		{"single quote", testUnit("docker", `/srv/'q'`)},
		{"backslash", testUnit("docker", `/srv/back\slash`)},
		{"unknown provider", testUnit("e2b", good)},
		{"bad id", Unit{InstallationID: "0F6E8C2A-3B1D-4E5F-9A7B-1C2D3E4F5A6B", Provider: "docker", NodeRoot: good}},
		{"id with newline", Unit{InstallationID: testID + "\n", Provider: "docker", NodeRoot: good}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, err := tc.unit.Render()
			if !errors.Is(err, ErrUnrepresentable) {
				t.Fatalf("want ErrUnrepresentable, got %v", err)
			}
			if text != nil {
				t.Fatalf("a refused unit has no text, got %q", text)
			}
		})
	}
}

func TestQuoteExecArg(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/plain", `"/plain"`},
		{"/with space", `"/with space"`},
		{`/q"uote`, `"/q\"uote"`},
		{`/back\slash`, `"/back\\slash"`},
		{`/\"`, `"/\\\""`},
		{"/100%/%n", `"/100%%/%%n"`},
		{"/$HOME", `"/$HOME"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := quoteExecArg(tc.in); got != tc.want {
				t.Fatalf("quoteExecArg(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

// TestUnitVerifies runs systemd-analyze verify on each rendered unit, with
// its ExecStart binary present in a temporary node root. systemd-analyze
// reports unknown keys and bad values as warnings with exit status 0, so any
// output at all is a failure.
func TestUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: cannot verify the unit")
	}
	for _, tc := range []struct{ name, provider, sub string }{
		{"docker", "docker", "nodes/" + testID},
		{"microsandbox", "microsandbox", "nodes/" + testID},
		{"odd paths", "docker", `odd dir/100%/$HOME;x/%n`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root := filepath.Join(dir, tc.sub)
			bin := filepath.Join(root, "native", "bin", "oac-node")
			if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			u := testUnit(tc.provider, root)
			text, err := u.Render()
			if err != nil {
				t.Fatal(err)
			}
			unitPath := filepath.Join(dir, u.Name())
			if err := os.WriteFile(unitPath, text, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(analyze, "verify", unitPath).CombinedOutput()
			if err != nil || len(out) > 0 {
				t.Fatalf("systemd-analyze verify %s: %v\n%s\nunit:\n%s", unitPath, err, out, text)
			}
		})
	}
}
