package lease

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

func TestPreparingRoundTrip(t *testing.T) {
	dir := genDir(t)
	cases := []Preparing{
		{Identity: testID(3)},
		{Identity: testID(3), ImportStarted: true, Configuration: json.RawMessage(`{"generation":3,"provider":"docker"}`)},
	}
	for _, want := range cases {
		if err := WritePreparing(dir, want, uid); err != nil {
			t.Fatal(err)
		}
		got, err := ReadPreparing(dir, 3, uid)
		if err != nil {
			t.Fatal(err)
		}
		if got.Identity != want.Identity || got.ImportStarted != want.ImportStarted || (got.Configuration == nil) != (want.Configuration == nil) {
			t.Errorf("read %+v, wrote %+v", got, want)
		}
		if want.Configuration != nil {
			var a, b any
			json.Unmarshal(got.Configuration, &a)
			json.Unmarshal(want.Configuration, &b)
			ga, _ := json.Marshal(a)
			gb, _ := json.Marshal(b)
			if string(ga) != string(gb) {
				t.Errorf("configuration %s, want %s", ga, gb)
			}
		}
	}
	if fi, _ := os.Stat(filepath.Join(dir, "3.preparing")); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	if err := RemovePreparing(dir, 3, uid); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPreparing(dir, 3, uid); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after remove: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".generation-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestCollectingAndDropped(t *testing.T) {
	dir := genDir(t)
	if err := WriteCollecting(dir, Collecting{Identity: testID(4)}, uid); err != nil {
		t.Fatal(err)
	}
	if err := WriteCollecting(dir, Collecting{Identity: testID(4), NativeComplete: true}, uid); err != nil {
		t.Fatal(err)
	}
	c, err := ReadCollecting(dir, 4, uid)
	if err != nil || !c.NativeComplete || c.Identity != testID(4) {
		t.Fatalf("ReadCollecting = %+v, %v", c, err)
	}
	if err := WriteDropped(dir, testID(4), uid); err != nil {
		t.Fatal(err)
	}
	if err := WriteDropped(dir, testID(4), uid); err != nil {
		t.Fatalf("rewriting the same dropped marker: %v", err)
	}
	other := testID(4)
	other.SpecificationDigest = strings.Repeat("a", 64)
	if err := WriteDropped(dir, other, uid); !errors.Is(err, safefile.ErrConflict) {
		t.Fatalf("dropped marker with another identity: %v", err)
	}
	if id, err := ReadDropped(dir, 4, uid); err != nil || id != testID(4) {
		t.Fatalf("ReadDropped = %+v, %v", id, err)
	}
	if err := WritePreparing(dir, Preparing{Identity: testID(4)}, uid); !errors.Is(err, ErrDropped) {
		t.Fatalf("preparing a dropped generation: %v", err)
	}
}

func TestRecordRefusals(t *testing.T) {
	id := `"installation_id": "` + testInstallation + `", "generation": 5, "specification_digest": "` + testDigest + `"`
	big := `{` + id + `, "import_started": false, "configuration": {"pad": "` + strings.Repeat("x", 8000) + `"}}`
	cases := []struct {
		name string
		file string
		data string
		mode os.FileMode
		read func(dir string) error
		err  error
	}{
		{"preparing valid and large", "5.preparing", big, 0o600, readPreparing, nil},
		{"preparing over 16384", "5.preparing", `{` + id + `, "import_started": false, "configuration": {"pad": "` + strings.Repeat("x", 17000) + `"}}`, 0o600, readPreparing, ErrTooLarge},
		{"preparing unknown key", "5.preparing", `{` + id + `, "import_started": false, "extra": 1}`, 0o600, readPreparing, ErrMalformed},
		{"preparing import_started missing", "5.preparing", `{` + id + `}`, 0o600, readPreparing, ErrMalformed},
		{"preparing import_started as int", "5.preparing", `{` + id + `, "import_started": 0}`, 0o600, readPreparing, ErrMalformed},
		{"preparing configuration not an object", "5.preparing", `{` + id + `, "import_started": true, "configuration": []}`, 0o600, readPreparing, ErrMalformed},
		{"preparing null", "5.preparing", `{` + id + `, "import_started": null}`, 0o600, readPreparing, ErrMalformed},
		{"preparing mode 0644", "5.preparing", `{` + id + `, "import_started": false}`, 0o644, readPreparing, ErrUnsafeMode},
		{"preparing of another generation", "5.preparing", strings.Replace(`{`+id+`, "import_started": false}`, `"generation": 5`, `"generation": 6`, 1), 0o600, readPreparing, ErrIdentityMismatch},
		{"collecting over 4096", "5.collecting", `{` + id + `, "native_complete": false` + strings.Repeat(" ", 4096) + `}`, 0o600, readCollecting, ErrTooLarge},
		{"collecting native_complete missing", "5.collecting", `{` + id + `}`, 0o600, readCollecting, ErrMalformed},
		{"collecting generation as float", "5.collecting", strings.Replace(`{`+id+`, "native_complete": false}`, `"generation": 5`, `"generation": 5.0`, 1), 0o600, readCollecting, ErrMalformed},
		{"collecting trailing data", "5.collecting", `{` + id + `, "native_complete": false} {}`, 0o600, readCollecting, ErrMalformed},
		{"dropped with an extra key", "5.dropped", `{` + id + `, "native_complete": true}`, 0o600, readDropped, ErrMalformed},
		{"dropped valid", "5.dropped", `{` + id + `}`, 0o600, readDropped, nil},
		{"preparing case variant", "5.preparing", `{` + id + `, "Import_Started": true, "import_started": false}`, 0o600, readPreparing, ErrMalformed},
		{"preparing duplicate key", "5.preparing", `{` + id + `, "import_started": true, "import_started": false}`, 0o600, readPreparing, ErrMalformed},
		{"preparing duplicate key in the configuration", "5.preparing", `{` + id + `, "import_started": false, "configuration": {"image": "a", "image": "b"}}`, 0o600, readPreparing, ErrMalformed},
		{"collecting case variant", "5.collecting", `{` + id + `, "Native_Complete": true, "native_complete": false}`, 0o600, readCollecting, ErrMalformed},
		{"dropped duplicate key", "5.dropped", `{` + id + `, "generation": 5}`, 0o600, readDropped, ErrMalformed},
		{"final configuration with other keys", "5.json", `{"installation_id": "` + testInstallation + `", "generation": 5, "provider": "docker"}`, 0o600, requireFinal, nil},
		{"final configuration case variant", "5.json", `{"INSTALLATION_ID": "11111111-2222-4333-8444-555555555555", "installation_id": "` + testInstallation + `", "generation": 5}`, 0o600, requireFinal, ErrMalformed},
		{"final configuration duplicate key", "5.json", `{"installation_id": "` + testInstallation + `", "generation": 4, "generation": 5}`, 0o600, requireFinal, ErrMalformed},
		{"final configuration generation as float", "5.json", `{"installation_id": "` + testInstallation + `", "generation": 5.0}`, 0o600, requireFinal, ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := genDir(t)
			writeFile(t, filepath.Join(dir, c.file), []byte(c.data), c.mode)
			err := c.read(dir)
			if c.err == nil && err != nil || !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
		})
	}
}

func readPreparing(dir string) error  { _, err := ReadPreparing(dir, 5, uid); return err }
func readCollecting(dir string) error { _, err := ReadCollecting(dir, 5, uid); return err }
func readDropped(dir string) error    { _, err := ReadDropped(dir, 5, uid); return err }
func requireFinal(dir string) error   { return RequireFinalConfig(dir, testID(5), uid)() }

func TestWritePreparingRefusesOversizedPlan(t *testing.T) {
	p := Preparing{Identity: testID(3), Configuration: json.RawMessage(`{"pad":"` + strings.Repeat("x", 17000) + `"}`)}
	if err := WritePreparing(genDir(t), p, uid); err == nil {
		t.Fatal("a plan over 16384 bytes was written")
	}
}

func FuzzParseLeaseIdentity(f *testing.F) {
	f.Add([]byte(`{"device": 64769, "generation": 1, "inode": 12, "installation_id": "` + testInstallation + `", "specification_digest": "` + testDigest + `"}`))
	f.Add([]byte(`{"generation": 1, "generation": 2}`))
	f.Add([]byte(`{"device": -1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseLeaseIdentity("x", data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		// A record that parses survives its own rendering unchanged.
		out, err := marshalLeaseIdentity(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := parseLeaseIdentity("x", out)
		if err != nil || r2 != r {
			t.Fatalf("round trip %+v → %s → %+v, %v", r, out, r2, err)
		}
	})
}
