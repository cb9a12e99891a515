package image

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFuzzSeeds regenerates the fuzz seed corpus when
// OAC_WRITE_FUZZ_SEEDS=1; otherwise it checks the valid seed still passes.
func TestWriteFuzzSeeds(t *testing.T) {
	valid, _ := buildArchive(t, FixtureOptions{Label: "seed"}, nil, nil)
	nested, _ := buildArchive(t, FixtureOptions{Label: "seed"}, func(f *fixtureImage) { f.nested = true }, nil)
	legacy, _ := buildArchive(t, FixtureOptions{Label: "seed"}, func(f *fixtureImage) {
		f.editLegacy = func(l *[]legacyEntry) { (*l)[0].Config = "x.json" }
	}, nil)
	seeds := map[string][]byte{
		"valid":       valid,
		"nested":      nested,
		"legacy-bad":  legacy,
		"truncated":   valid[:len(valid)/2],
		"empty":       nil,
		"not-a-tar-1": []byte("index.json"),
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzIdentifyReader")
	if os.Getenv("OAC_WRITE_FUZZ_SEEDS") != "1" {
		b, err := os.ReadFile(filepath.Join(dir, "valid"))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", valid); string(b) != want {
			t.Fatal("the committed seed corpus is stale: rerun with OAC_WRITE_FUZZ_SEEDS=1")
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
