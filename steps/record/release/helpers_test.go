package release

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const (
	testCommit = "0123456789abcdef0123456789abcdef01234567"
	testTree   = "89abcdef0123456789abcdef0123456789abcdef"
)

func hex64(c byte) string { return strings.Repeat(string(c), 64) }

// testManifest returns a valid manifest declaring every catalog artifact.
func testManifest() *Manifest {
	m := &Manifest{
		ArtifactBaseURL:      "https://releases.example/oac/build-" + testCommit,
		Artifacts:            map[string]Artifact{},
		Images:               map[string]string{"runtime": "sha256:" + hex64('a')},
		ImageManifestDigests: map[string]string{"runtime": "sha256:" + hex64('b')},
		Microsandbox:         Microsandbox{Version: "0.7.2", RuntimeSHA256: hex64('c'), FirmwareSHA256: hex64('d')},
		Platform:             Platform,
		RuntimeRef:           "oac-runtime@sha256:" + hex64('b'),
		SourceCommit:         testCommit,
		SourceTree:           testTree,
	}
	for i, spec := range Catalog(ProviderMicrosandbox) {
		if spec.Role == RolePolicy {
			continue
		}
		a := Artifact{Filename: FileName(testCommit, spec.Suffix), SHA256: hex64("0123456789"[i]), Size: int64(100 + i)}
		if spec.Path == PathRuntimeImage {
			a.UnpackedSHA256, a.UnpackedSize = hex64('e'), 4096
		}
		m.Artifacts[spec.Path] = a
	}
	return m
}

// manifestDoc returns testManifest as a generic JSON document to mutate.
func manifestDoc(t *testing.T) map[string]any {
	t.Helper()
	data, err := testManifest().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// sub returns the nested object at the dotted keys (keys may not hold dots,
// so artifacts are reached with artifact()).
func sub(doc map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		doc = doc[k].(map[string]any)
	}
	return doc
}

func artifact(doc map[string]any, path string) map[string]any {
	return doc["artifacts"].(map[string]any)[path].(map[string]any)
}

func encode(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// wantField checks that err is a *FieldError of kind with the given field
// (when field is not empty).
func wantField(t *testing.T, err, kind error, field string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error %v, want %v", err, kind)
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v is not a *FieldError", err)
	}
	if field != "" && fe.Field != field {
		t.Fatalf("error about %q (%v), want about %q", fe.Field, err, field)
	}
}
