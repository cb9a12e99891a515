package hostrecord

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

const testID = "0b7c9d4e-5f6a-4b8c-9d0e-1f2a3b4c5d6e"

// sample is a record as install makes it; opts adds the optional keys.
func sample(h layout.Host, opts bool) Record {
	r := Record{Format: Version, InstallationID: testID, Provider: "docker", CoreURL: "https://core.example",
		NodeRoot: h.NodeRoot(testID), Unit: h.Unit(testID)}
	if opts {
		r.AllowInsecureOrigin = true
		r.CoreCA = layout.Node{Root: h.NodeRoot(testID)}.CoreCA()
		r.CoreCASHA256 = strings.Repeat("ab", 32)
	}
	return r
}

// earlier is the map the installer marshalled before Record existed, for
// the same values.
func earlier(r Record) map[string]any {
	m := map[string]any{"format": 1, "installation_id": r.InstallationID, "provider": r.Provider,
		"core_url": r.CoreURL, "node_root": r.NodeRoot, "unit": r.Unit}
	if r.AllowInsecureOrigin {
		m["allow_insecure_origin"] = true
	}
	if r.CoreCA != "" {
		m["core_ca"], m["core_ca_sha256"] = r.CoreCA, r.CoreCASHA256
	}
	return m
}

// newHost returns a host rooted in a temporary directory with
// /etc/oac-node made. Read requires root's ownership.
func newHost(t *testing.T) layout.Host {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a host record must be owned by root: run as root")
	}
	h := layout.Host{Root: t.TempDir()}
	if err := os.MkdirAll(h.EtcDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	return h
}

// The bytes are those earlier versions wrote (json.MarshalIndent of a map,
// keys sorted, two spaces, a final newline), with and without the
// optional keys, and a plain http Core address keeps its characters.
func TestMarshalIsEarlierBytes(t *testing.T) {
	h := layout.Host{Root: "/"}
	for _, tc := range []struct {
		name string
		rec  Record
	}{
		{"plain", sample(h, false)},
		{"insecure origin and Core CA", sample(h, true)},
		{"insecure origin only", func() Record { r := sample(h, false); r.AllowInsecureOrigin = true; return r }()},
		{"characters json escapes", func() Record { r := sample(h, false); r.CoreURL = "http://a<b>&c\u2028"; return r }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.rec.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.MarshalIndent(earlier(tc.rec), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if want = append(want, '\n'); string(got) != string(want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
	const plain = `{
  "core_url": "https://core.example",
  "format": 1,
  "installation_id": "0b7c9d4e-5f6a-4b8c-9d0e-1f2a3b4c5d6e",
  "node_root": "/var/lib/oac-node/.oac/nodes/0b7c9d4e-5f6a-4b8c-9d0e-1f2a3b4c5d6e",
  "provider": "docker",
  "unit": "/etc/systemd/system/oac-node-0b7c9d4e-5f6a-4b8c-9d0e-1f2a3b4c5d6e.service"
}
`
	if got, _ := sample(h, false).Marshal(); string(got) != plain {
		t.Errorf("got\n%s\nwant\n%s", got, plain)
	}
}

// Write then Read returns the record; the file is 0644 and Write replaces
// an earlier one.
func TestRoundTrip(t *testing.T) {
	h := newHost(t)
	for _, opts := range []bool{true, false} {
		want := sample(h, opts)
		if err := Write(h, want); err != nil {
			t.Fatal(err)
		}
		got, err := Read(h, testID)
		if err != nil || got != want {
			t.Fatalf("Read = %+v, %v; want %+v", got, err, want)
		}
		fi, err := os.Stat(h.Record(testID))
		if err != nil || fi.Mode().Perm() != 0o644 {
			t.Fatalf("mode: %v %v", fi, err)
		}
	}
}

// A key the record does not know is skipped, and node_root and unit may be
// left out: every reader before the strict decoder read such records.
func TestReadSkipsUnknownKeys(t *testing.T) {
	h := newHost(t)
	want := Record{Format: 1, InstallationID: testID, Provider: "docker", CoreURL: "https://core.example"}
	must(t, os.WriteFile(h.Record(testID), []byte(`{"format": 1, "installation_id": "`+testID+
		`", "provider": "docker", "core_url": "https://core.example", "note": {"by": "hand"}}`), 0o644))
	if got, err := Read(h, testID); err != nil || got != want {
		t.Errorf("Read = %+v, %v; want %+v", got, err, want)
	}
}

// A missing record or directory matches fs.ErrNotExist.
func TestReadMissing(t *testing.T) {
	h := newHost(t)
	if _, err := Read(h, testID); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing record: %v", err)
	}
	if _, err := Read(layout.Host{Root: t.TempDir()}, testID); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
}

// A record this installer did not write is refused with an error that
// names the file and what is wrong, never read leniently.
func TestReadRefusesOddRecords(t *testing.T) {
	h := newHost(t)
	good, _ := sample(h, false).Marshal()
	body := strings.TrimSuffix(strings.TrimSpace(string(good)), "}")
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string)
		is    error
		want  string
	}{
		{"not JSON", content("{"), ErrInvalid, "not valid JSON"},
		{"duplicate key", content(body + `, "core_url": "https://other.example"}`), strictjson.ErrInvalid, "core_url"},
		{"duplicate key after unescaping", content(body + `, "core\u005furl": "https://other.example"}`), ErrInvalid, "core_url"},
		{"unknown key in another case", content(body + `, "Core_URL": "https://other.example"}`), ErrInvalid, "Core_URL"},
		{"key in another case", content(body + `, "Provider": "docker"}`), ErrInvalid, "Provider"},
		{"missing key", content(strings.Replace(string(good), `  "provider": "docker",`+"\n", "", 1)), ErrInvalid, "provider"},
		{"null", content(strings.Replace(string(good), `"docker"`, "null", 1)), ErrInvalid, "provider"},
		{"another format", content(strings.Replace(string(good), `"format": 1`, `"format": 2`, 1)), ErrInvalid, "format 2"},
		{"two documents", content(string(good) + string(good)), ErrInvalid, "not valid JSON"},
		{"too large", content(string(good) + strings.Repeat(" ", MaxSize)), safefile.ErrTooLarge, "at most"},
		{"symbolic link", func(t *testing.T, path string) {
			target := filepath.Join(filepath.Dir(path), "elsewhere")
			must(t, os.WriteFile(target, good, 0o644))
			must(t, os.Symlink(target, path))
		}, safefile.ErrSymlink, "symbolic link"},
		{"hard link", func(t *testing.T, path string) {
			must(t, os.WriteFile(path, good, 0o644))
			must(t, os.Link(path, path+".other"))
		}, safefile.ErrHardLinked, "link"},
		{"another owner", func(t *testing.T, path string) {
			must(t, os.WriteFile(path, good, 0o644))
			must(t, os.Chown(path, 1234, 1234))
		}, safefile.ErrForeignOwner, "owner uid 1234"},
		{"directory", func(t *testing.T, path string) { must(t, os.Mkdir(path, 0o755)) }, safefile.ErrNotRegular, "directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t)
			tc.setup(t, h.Record(testID))
			_, err := Read(h, testID)
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read: %v; want %v naming %q", err, tc.is, tc.want)
			}
			if errors.Is(err, ErrInvalid) && !strings.Contains(err.Error(), h.Record(testID)) {
				t.Errorf("the error does not name the file: %v", err)
			}
		})
	}
}

func content(s string) func(*testing.T, string) {
	return func(t *testing.T, path string) { must(t, os.WriteFile(path, []byte(s), 0o644)) }
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
