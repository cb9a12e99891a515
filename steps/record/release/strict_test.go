package release

import (
	"encoding/json"
	"strings"
	"testing"
)

// The manifest and the specification were read through maps that kept the
// last of two equal keys; both now refuse duplicates at every depth and
// keys that differ from a known key only in case.
func TestManifestAndSpecificationRefuseDuplicatesAndCaseVariants(t *testing.T) {
	manifest, err := testManifest().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	spec, _ := json.Marshal(specDoc(map[string]any{"cpus": 2, "memory_mib": 2048}))
	if _, err := ParseSpecification(ProviderDocker, spec); err != nil {
		t.Fatalf("the base specification is refused: %v", err)
	}
	replace := func(doc []byte, old, new string) []byte {
		t.Helper()
		if !strings.Contains(string(doc), old) {
			t.Fatalf("%s not in %s", old, doc)
		}
		return []byte(strings.Replace(string(doc), old, new, 1))
	}
	node := `"` + PathNode + `": {`
	for _, tc := range []struct {
		name, field string
		doc         []byte
		kind        error
		parse       func([]byte) error
	}{
		{"manifest duplicate top-level key", "source_commit", replace(manifest, `{`, `{"source_commit": "`+strings.Repeat("0", 40)+`",`), ErrInvalidManifest, parseManifestErr},
		{"manifest duplicate artifact path", "artifacts." + PathNode, replace(manifest, node, node+`"filename": "x", "sha256": "y", "size": 1}, `+node), ErrInvalidManifest, parseManifestErr},
		{"manifest duplicate key in an artifact", "artifacts." + PathNode + ".size", replace(manifest, node, node+`"size": 1, `), ErrInvalidManifest, parseManifestErr},
		{"manifest duplicate image", "images.runtime", replace(manifest, `"images": {`, `"images": {"runtime": "sha256:`+hex64('0')+`", `), ErrInvalidManifest, parseManifestErr},
		{"manifest case variant in microsandbox", "microsandbox.Version", replace(manifest, `"microsandbox": {`, `"microsandbox": {"Version": "9.9.9", `), ErrInvalidManifest, parseManifestErr},
		{"specification duplicate resource", "resources.cpus", replace(spec, `"cpus":2`, `"cpus":2,"cpus":64`), ErrInvalidSpecification, parseDockerSpecErr},
		{"specification case variant", "resources.CPUs", replace(spec, `"cpus":2`, `"cpus":2,"CPUs":64`), ErrInvalidSpecification, parseDockerSpecErr},
		{"specification duplicate runtime", "runtime", replace(spec, `{"resources"`, `{"runtime":{},"resources"`), ErrInvalidSpecification, parseDockerSpecErr},
		{"specification null runtime", "runtime", []byte(`{"resources":{"cpus":2,"memory_mib":2048},"runtime":null}`), ErrInvalidSpecification, parseE2BSpecErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantField(t, tc.parse(tc.doc), tc.kind, tc.field)
		})
	}
}

func parseManifestErr(data []byte) error { _, err := ParseManifest(data); return err }
func parseDockerSpecErr(data []byte) error {
	_, err := ParseSpecification(ProviderDocker, data)
	return err
}
func parseE2BSpecErr(data []byte) error { _, err := ParseSpecification(ProviderE2B, data); return err }
