package image_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/image/imagetest"
)

// TestWriteFuzzSeeds regenerates the fuzz seed corpus when
// OAC_WRITE_FUZZ_SEEDS=1; otherwise it checks the valid seed still passes.
func TestWriteFuzzSeeds(t *testing.T) {
	valid, _ := buildArchive(t, imagetest.Options{Label: "seed"}, nil, nil)
	nested, _ := buildArchive(t, imagetest.Options{Label: "seed"}, func(f *imagetest.Image) { f.Nested = true }, nil)
	attested, _ := buildArchive(t, imagetest.Options{Label: "seed", Attestation: true}, nil, nil)
	attestedBare, _ := buildArchive(t, imagetest.Options{Label: "seed", Attestation: true}, func(f *imagetest.Image) { f.OmitAttestationBlobs = true }, nil)
	legacy, _ := buildArchive(t, imagetest.Options{Label: "seed"}, func(f *imagetest.Image) {
		f.EditLegacy = func(l *[]imagetest.LegacyEntry) { (*l)[0].Config = "x.json" }
	}, nil)
	seeds := map[string][]byte{
		"valid":         valid,
		"nested":        nested,
		"attested":      attested,
		"attested-bare": attestedBare,
		"legacy-bad":    legacy,
		"truncated":     valid[:len(valid)/2],
		"empty":         nil,
		"not-a-tar-1":   []byte("index.json"),
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzIdentifyReader")
	if os.Getenv("OAC_WRITE_FUZZ_SEEDS") != "1" {
		for _, name := range []string{"valid", "attested"} {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", seeds[name]); string(b) != want {
				t.Fatalf("the committed seed %s is stale: rerun with OAC_WRITE_FUZZ_SEEDS=1", name)
			}
		}
		return
	}
	os.MkdirAll(dir, 0o755)
	for name, b := range seeds {
		if err := os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
