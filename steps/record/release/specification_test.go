package release

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func testRuntimeDoc() map[string]any {
	return map[string]any{
		"source_commit":         testCommit,
		"image_id":              "sha256:" + hex64('a'),
		"image_manifest_digest": "sha256:" + hex64('b'),
		"microsandbox_ref":      "oac-runtime@sha256:" + hex64('b'),
		"runtime_sha256":        hex64('c'),
		"firmware_sha256":       hex64('d'),
	}
}

func specDoc(resources map[string]any) map[string]any {
	return map[string]any{"resources": resources, "runtime": testRuntimeDoc()}
}

func TestParseSpecification(t *testing.T) {
	res := func() map[string]any { return map[string]any{"cpus": 2, "memory_mib": 2048} }
	tests := []struct {
		name      string
		provider  string
		mutate    func(d map[string]any)
		raw       string
		canonical string // checked when set
		field     string // "" means valid
		want      error  // when not a field error
	}{
		{name: "docker", provider: "docker", mutate: func(map[string]any) {},
			canonical: `{"provider":"docker","resources":{"cpus":2,"memory_mib":2048},"runtime":{"source_commit":"` + testCommit + `","image_id":"sha256:` + hex64('a') + `","image_manifest_digest":"sha256:` + hex64('b') + `","microsandbox_ref":"oac-runtime@sha256:` + hex64('b') + `","runtime_sha256":"` + hex64('c') + `","firmware_sha256":"` + hex64('d') + `"}}`},
		{name: "docker zero disks omitted", provider: "docker", mutate: func(d map[string]any) {
			sub(d, "resources")["root_disk_mib"] = 0
			sub(d, "resources")["environment_disk_mib"] = 0
		}},
		{name: "microsandbox disks", provider: "microsandbox", mutate: func(d map[string]any) {
			sub(d, "resources")["environment_disk_mib"] = 8192
			sub(d, "resources")["root_disk_mib"] = 4096
		}},
		{name: "microsandbox without disks", provider: "microsandbox", mutate: func(map[string]any) {}},
		{name: "e2b", provider: "e2b", mutate: func(d map[string]any) { delete(d, "runtime") },
			canonical: `{"provider":"e2b","resources":{"cpus":2,"memory_mib":2048}}`},
		{name: "key order in input does not matter", provider: "docker", raw: `{"runtime":` + string(mustJSON(testRuntimeDoc())) + `,"resources":{"memory_mib":2048,"cpus":2}}`},
		{name: "cpus at bounds", provider: "docker", mutate: func(d map[string]any) { sub(d, "resources")["cpus"] = 255 }},
		{name: "memory at bounds", provider: "docker", mutate: func(d map[string]any) {
			sub(d, "resources")["memory_mib"] = 512
		}},
		{name: "max disk", provider: "microsandbox", mutate: func(d map[string]any) { sub(d, "resources")["root_disk_mib"] = 4294967295 }},

		{name: "unknown provider", provider: "kubernetes", mutate: func(map[string]any) {}, want: ErrUnknownProvider},
		{name: "not an object", provider: "docker", raw: `[]`, field: "specification"},
		{name: "null", provider: "docker", raw: `null`, field: "specification"},
		{name: "unknown top-level key", provider: "docker", mutate: func(d map[string]any) { d["workspace"] = map[string]any{} }, field: "workspace"},
		{name: "provider key not part of the object", provider: "docker", mutate: func(d map[string]any) { d["provider"] = "docker" }, field: "provider"},
		{name: "resources missing", provider: "docker", mutate: func(d map[string]any) { delete(d, "resources") }, field: "resources"},
		{name: "resources array", provider: "docker", mutate: func(d map[string]any) { d["resources"] = []any{} }, field: "resources"},
		{name: "unknown resource", provider: "docker", mutate: func(d map[string]any) { sub(d, "resources")["gpus"] = 1 }, field: "resources.gpus"},
		{name: "resource key other case", provider: "docker", mutate: func(d map[string]any) {
			sub(d, "resources")["CPUS"] = 2
			delete(sub(d, "resources"), "cpus")
		}, field: "resources.CPUS"},
		{name: "cpus missing", provider: "docker", mutate: func(d map[string]any) { delete(sub(d, "resources"), "cpus") }, field: "resources.cpus"},
		{name: "cpus bool", provider: "docker", mutate: func(d map[string]any) { sub(d, "resources")["cpus"] = true }, field: "resources.cpus"},
		{name: "cpus float", provider: "docker", mutate: func(d map[string]any) { sub(d, "resources")["cpus"] = json.Number("2.0") }, field: "resources.cpus"},
		{name: "cpus exponent", provider: "docker", mutate: func(d map[string]any) { sub(d, "resources")["cpus"] = json.Number("2e0") }, field: "resources.cpus"},
		{name: "cpus string", provider: "docker", mutate: func(d map[string]any) { sub(d, "resources")["cpus"] = "2" }, field: "resources.cpus"},
		{name: "cpus zero", provider: "docker", mutate: func(d map[string]any) { sub(d, "resources")["cpus"] = 0 }, field: "resources.cpus"},
		{name: "cpus too many", provider: "docker", mutate: func(d map[string]any) { sub(d, "resources")["cpus"] = 256 }, field: "resources.cpus"},
		{name: "memory too small", provider: "docker", mutate: func(d map[string]any) { sub(d, "resources")["memory_mib"] = 511 }, field: "resources.memory_mib"},
		{name: "memory too large", provider: "docker", mutate: func(d map[string]any) { sub(d, "resources")["memory_mib"] = 1048577 }, field: "resources.memory_mib"},
		{name: "memory missing", provider: "docker", mutate: func(d map[string]any) { delete(sub(d, "resources"), "memory_mib") }, field: "resources.memory_mib"},
		{name: "docker disk", provider: "docker", mutate: func(d map[string]any) { sub(d, "resources")["root_disk_mib"] = 4096 }, field: "resources.root_disk_mib"},
		{name: "e2b disk", provider: "e2b", mutate: func(d map[string]any) {
			delete(d, "runtime")
			sub(d, "resources")["environment_disk_mib"] = 4096
		}, field: "resources.environment_disk_mib"},
		{name: "disk below minimum", provider: "microsandbox", mutate: func(d map[string]any) { sub(d, "resources")["root_disk_mib"] = 1023 }, field: "resources.root_disk_mib"},
		{name: "disk too large", provider: "microsandbox", mutate: func(d map[string]any) {
			sub(d, "resources")["environment_disk_mib"] = json.Number("4294967296")
		}, field: "resources.environment_disk_mib"},
		{name: "disk negative", provider: "microsandbox", mutate: func(d map[string]any) { sub(d, "resources")["root_disk_mib"] = -1 }, field: "resources.root_disk_mib"},
		{name: "disk bool", provider: "microsandbox", mutate: func(d map[string]any) { sub(d, "resources")["root_disk_mib"] = false }, field: "resources.root_disk_mib"},

		{name: "runtime missing", provider: "docker", mutate: func(d map[string]any) { delete(d, "runtime") }, field: "runtime"},
		{name: "runtime for e2b", provider: "e2b", mutate: func(map[string]any) {}, field: "runtime"},
		{name: "runtime null", provider: "microsandbox", mutate: func(d map[string]any) { d["runtime"] = nil }, field: "runtime"},
		{name: "unknown runtime key", provider: "docker", mutate: func(d map[string]any) { sub(d, "runtime")["tag"] = "latest" }, field: "runtime.tag"},
		{name: "source_commit short", provider: "docker", mutate: func(d map[string]any) { sub(d, "runtime")["source_commit"] = "abc" }, field: "runtime.source_commit"},
		{name: "image_id missing", provider: "docker", mutate: func(d map[string]any) { delete(sub(d, "runtime"), "image_id") }, field: "runtime.image_id"},
		{name: "image_id bare hex", provider: "docker", mutate: func(d map[string]any) { sub(d, "runtime")["image_id"] = hex64('a') }, field: "runtime.image_id"},
		{name: "manifest digest uppercase", provider: "docker", mutate: func(d map[string]any) { sub(d, "runtime")["image_manifest_digest"] = "sha256:" + hex64('B') }, field: "runtime.image_manifest_digest"},
		{name: "microsandbox_ref tag", provider: "microsandbox", mutate: func(d map[string]any) { sub(d, "runtime")["microsandbox_ref"] = "oac-runtime:1" }, field: "runtime.microsandbox_ref"},
		{name: "runtime_sha256 number", provider: "microsandbox", mutate: func(d map[string]any) { sub(d, "runtime")["runtime_sha256"] = 1 }, field: "runtime.runtime_sha256"},
		{name: "firmware_sha256 bad", provider: "microsandbox", mutate: func(d map[string]any) { sub(d, "runtime")["firmware_sha256"] = "sha256:" + hex64('d') }, field: "runtime.firmware_sha256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := []byte(tt.raw)
			if tt.raw == "" {
				doc := specDoc(res())
				tt.mutate(doc)
				raw = encode(t, doc)
			}
			s, err := ParseSpecification(tt.provider, raw)
			switch {
			case tt.want != nil:
				if !errors.Is(err, tt.want) {
					t.Fatalf("got %v, want %v", err, tt.want)
				}
				return
			case tt.field != "":
				wantField(t, err, ErrInvalidSpecification, tt.field)
				return
			case err != nil:
				t.Fatal(err)
			}
			canon := s.Canonical()
			if tt.canonical != "" && string(canon) != tt.canonical {
				t.Fatalf("Canonical =\n%s\nwant\n%s", canon, tt.canonical)
			}
			if strings.Contains(string(canon), `_disk_mib":0`) {
				t.Fatalf("zero disk not omitted: %s", canon)
			}
			obj, _ := s.MarshalJSON()
			back, err := ParseSpecification(tt.provider, obj)
			if err != nil {
				t.Fatalf("MarshalJSON output %s does not parse: %v", obj, err)
			}
			if back.Digest() != s.Digest() {
				t.Fatal("digest changed through MarshalJSON")
			}
		})
	}
}

// TestSpecificationDigest pins digests computed by the platform's Python
// json.dumps(obj, separators=(",", ":"), ensure_ascii=False).
func TestSpecificationDigest(t *testing.T) {
	tests := []struct {
		provider string
		doc      map[string]any
		digest   string
	}{
		{"docker", specDoc(map[string]any{"cpus": 2, "memory_mib": 2048}), "4a7c75643fd1c5071104c9e7e991d948be029200db26f4d4f323da7c95c28698"},
		{"microsandbox", specDoc(map[string]any{"cpus": 2, "memory_mib": 2048, "root_disk_mib": 4096, "environment_disk_mib": 8192}), "7672661c2ca2aff8675db30a0d4e939e155b62e204d74eb425c67d72c17c7e87"},
		{"e2b", map[string]any{"resources": map[string]any{"cpus": 1, "memory_mib": 512}}, "bfedd8252478cfeb7e927ccd9aab6e812e0a35405046db3cf023fe62a869de04"},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			s, err := ParseSpecification(tt.provider, encode(t, tt.doc))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Digest(); got != tt.digest {
				t.Fatalf("Digest = %s, want %s (canonical %s)", got, tt.digest, s.Canonical())
			}
		})
	}
}

func TestMatchRelease(t *testing.T) {
	m := testManifest()
	good := func() *Specification {
		rt := RuntimeOf(m)
		return &Specification{Provider: "docker", Resources: Resources{CPUs: 1, MemoryMiB: 512}, Runtime: &rt}
	}
	tests := []struct {
		name   string
		mutate func(*Specification)
		ok     bool
	}{
		{name: "match", mutate: func(*Specification) {}, ok: true},
		{name: "no runtime", mutate: func(s *Specification) { s.Runtime = nil }},
		{name: "source commit", mutate: func(s *Specification) { s.Runtime.SourceCommit = testTree }},
		{name: "image id", mutate: func(s *Specification) { s.Runtime.ImageID = "sha256:" + hex64('0') }},
		{name: "manifest digest", mutate: func(s *Specification) { s.Runtime.ImageManifestDigest = "sha256:" + hex64('0') }},
		{name: "microsandbox ref", mutate: func(s *Specification) { s.Runtime.MicrosandboxRef = "oac-runtime@sha256:" + hex64('0') }},
		{name: "runtime sha", mutate: func(s *Specification) { s.Runtime.RuntimeSHA256 = hex64('0') }},
		{name: "firmware sha", mutate: func(s *Specification) { s.Runtime.FirmwareSHA256 = hex64('0') }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := good()
			tt.mutate(s)
			err := MatchRelease(s, m)
			if tt.ok != (err == nil) || err != nil && !errors.Is(err, ErrReleaseMismatch) {
				t.Fatalf("MatchRelease = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
