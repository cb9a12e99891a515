package provider

import (
	"errors"
	"strings"
	"testing"
)

// Every object of a configuration, the specification inside it included,
// refuses duplicate keys and keys that differ from a known key only in
// case.
func TestParseRefusesDuplicatesAndCaseVariants(t *testing.T) {
	docker, err := dockerBase(t).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	micro, err := microBase(t).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	replace := func(doc []byte, old, new string) []byte {
		t.Helper()
		if !strings.Contains(string(doc), old) {
			t.Fatalf("%s not in %s", old, doc)
		}
		return []byte(strings.Replace(string(doc), old, new, 1))
	}
	for _, tc := range []struct {
		name string
		doc  []byte
	}{
		{"case variant", replace(docker, `"core_url":`, `"CORE_URL": "https://other.example/api/v1", "core_url":`)},
		{"duplicate in the docker object", replace(docker, `"nested_sandbox":`, `"nested_sandbox": false, "nested_sandbox":`)},
		{"duplicate in the specification", replace(docker, `"cpus":`, `"cpus": 64, "cpus":`)},
		{"case variant in the specification runtime", replace(docker, `"image_id":`, `"Image_ID": "sha256:00", "image_id":`)},
		{"duplicate in a network rule", replace(micro, `"action":`, `"action": "deny", "action":`)},
		{"null rule port", replace(micro, `"action":`, `"port": null, "action":`)},
		{"null adapter", replace(docker, `"docker":`, `"microsandbox": null, "docker":`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse(tc.doc); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse: %v, want ErrMalformed", err)
			}
		})
	}
}
