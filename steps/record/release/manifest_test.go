package release

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseManifest(t *testing.T) {
	rt := PathRuntimeImage
	node := PathNode
	tests := []struct {
		name   string
		mutate func(doc map[string]any)
		raw    []byte // used instead of the mutated document when set
		field  string // "" means valid
	}{
		{name: "valid", mutate: func(map[string]any) {}},
		{name: "unknown top-level key ignored", mutate: func(d map[string]any) { d["bundle"] = "full" }},
		{name: "offline build has no base url", mutate: func(d map[string]any) { d["artifact_base_url"] = "" }},
		{name: "full bundle images", mutate: func(d map[string]any) {
			sub(d, "images")["core"] = "sha256:" + hex64('1')
			sub(d, "image_manifest_digests")["core"] = "sha256:" + hex64('2')
		}},
		{name: "seccomp artifact entry allowed", mutate: func(d map[string]any) {
			d["artifacts"].(map[string]any)[PathSeccomp] = map[string]any{"filename": FileName(testCommit, "seccomp.json"), "sha256": hex64('9'), "size": 7}
		}},
		{name: "extra distribution artifact", mutate: func(d map[string]any) {
			d["artifacts"].(map[string]any)["native/bin/oac-daemon"] = map[string]any{"filename": FileName(testCommit, "daemon"), "sha256": hex64('9'), "size": 7}
		}},

		{name: "not an object", raw: []byte(`[]`), field: "manifest.json"},
		{name: "not json", raw: []byte(`{"source_commit":`), field: "manifest.json"},
		{name: "invalid utf-8", raw: []byte("{\"x\":\"\xff\"}"), field: "manifest.json"},

		{name: "source_commit missing", mutate: func(d map[string]any) { delete(d, "source_commit") }, field: "source_commit"},
		{name: "source_commit key in other case", mutate: func(d map[string]any) {
			d["Source_Commit"] = d["source_commit"]
			delete(d, "source_commit")
		}, field: "Source_Commit"},
		{name: "source_commit and a case variant", mutate: func(d map[string]any) {
			d["SOURCE_COMMIT"] = strings.Repeat("0", 40)
		}, field: "SOURCE_COMMIT"},
		{name: "source_commit uppercase", mutate: func(d map[string]any) { d["source_commit"] = strings.ToUpper(testCommit) }, field: "source_commit"},
		{name: "source_commit short", mutate: func(d map[string]any) { d["source_commit"] = testCommit[:39] }, field: "source_commit"},
		{name: "source_commit number", mutate: func(d map[string]any) { d["source_commit"] = 12 }, field: "source_commit"},
		{name: "source_tree bad", mutate: func(d map[string]any) { d["source_tree"] = "tree" }, field: "source_tree"},
		{name: "platform arm64", mutate: func(d map[string]any) { d["platform"] = "linux/arm64" }, field: "platform"},

		{name: "base url http", mutate: func(d map[string]any) { d["artifact_base_url"] = "http://releases.example/v1" }, field: "artifact_base_url"},
		{name: "base url query", mutate: func(d map[string]any) { d["artifact_base_url"] = "https://releases.example/v1?x=1" }, field: "artifact_base_url"},
		{name: "base url empty query", mutate: func(d map[string]any) { d["artifact_base_url"] = "https://releases.example/v1?" }, field: "artifact_base_url"},
		{name: "base url fragment", mutate: func(d map[string]any) { d["artifact_base_url"] = "https://releases.example/v1#x" }, field: "artifact_base_url"},
		{name: "base url credentials", mutate: func(d map[string]any) { d["artifact_base_url"] = "https://u:p@releases.example/v1" }, field: "artifact_base_url"},
		{name: "base url no path", mutate: func(d map[string]any) { d["artifact_base_url"] = "https://releases.example" }, field: "artifact_base_url"},
		{name: "base url root path", mutate: func(d map[string]any) { d["artifact_base_url"] = "https://releases.example/" }, field: "artifact_base_url"},
		{name: "base url latest", mutate: func(d map[string]any) { d["artifact_base_url"] = "https://releases.example/download/latest/x" }, field: "artifact_base_url"},
		{name: "base url no host", mutate: func(d map[string]any) { d["artifact_base_url"] = "https:///v1" }, field: "artifact_base_url"},
		{name: "base url not a string", mutate: func(d map[string]any) { d["artifact_base_url"] = nil }, field: "artifact_base_url"},

		{name: "artifacts not an object", mutate: func(d map[string]any) { d["artifacts"] = []any{} }, field: "artifacts"},
		{name: "docker artifact missing", mutate: func(d map[string]any) { delete(d["artifacts"].(map[string]any), node) }, field: "artifacts." + node},
		{name: "microsandbox artifact missing", mutate: func(d map[string]any) { delete(d["artifacts"].(map[string]any), PathMicroFirmware) }, field: "artifacts." + PathMicroFirmware},
		{name: "unsafe logical path", mutate: func(d map[string]any) {
			d["artifacts"].(map[string]any)["../x"] = artifact(d, node)
		}, field: "artifacts.../x"},
		{name: "filename missing", mutate: func(d map[string]any) { delete(artifact(d, node), "filename") }, field: "artifacts." + node + ".filename"},
		{name: "filename slash", mutate: func(d map[string]any) { artifact(d, node)["filename"] = "x/" + testCommit }, field: "artifacts." + node + ".filename"},
		{name: "filename space", mutate: func(d map[string]any) { artifact(d, node)["filename"] = "a " + testCommit }, field: "artifacts." + node + ".filename"},
		{name: "filename dot", mutate: func(d map[string]any) { artifact(d, node)["filename"] = "." }, field: "artifacts." + node + ".filename"},
		{name: "filename dotdot", mutate: func(d map[string]any) { artifact(d, node)["filename"] = ".." }, field: "artifacts." + node + ".filename"},
		{name: "filename without commit", mutate: func(d map[string]any) { artifact(d, node)["filename"] = "oac-node" }, field: "artifacts." + node + ".filename"},
		{name: "filename duplicate", mutate: func(d map[string]any) { artifact(d, node)["filename"] = artifact(d, rt)["filename"] }, field: "artifacts." + node + ".filename"},
		{name: "sha256 uppercase", mutate: func(d map[string]any) { artifact(d, node)["sha256"] = hex64('A') }, field: "artifacts." + node + ".sha256"},
		{name: "sha256 short", mutate: func(d map[string]any) { artifact(d, node)["sha256"] = hex64('a')[:63] }, field: "artifacts." + node + ".sha256"},
		{name: "size missing", mutate: func(d map[string]any) { delete(artifact(d, node), "size") }, field: "artifacts." + node + ".size"},
		{name: "size zero", mutate: func(d map[string]any) { artifact(d, node)["size"] = 0 }, field: "artifacts." + node + ".size"},
		{name: "size negative", mutate: func(d map[string]any) { artifact(d, node)["size"] = -5 }, field: "artifacts." + node + ".size"},
		{name: "size float", mutate: func(d map[string]any) { artifact(d, node)["size"] = json.Number("5.0") }, field: "artifacts." + node + ".size"},
		{name: "size exponent", mutate: func(d map[string]any) { artifact(d, node)["size"] = json.Number("5e2") }, field: "artifacts." + node + ".size"},
		{name: "size bool", mutate: func(d map[string]any) { artifact(d, node)["size"] = true }, field: "artifacts." + node + ".size"},
		{name: "size string", mutate: func(d map[string]any) { artifact(d, node)["size"] = "5" }, field: "artifacts." + node + ".size"},
		{name: "size null", mutate: func(d map[string]any) { artifact(d, node)["size"] = nil }, field: "artifacts." + node + ".size"},
		{name: "size overflow", mutate: func(d map[string]any) { artifact(d, node)["size"] = json.Number("9223372036854775808") }, field: "artifacts." + node + ".size"},
		{name: "unpacked_sha256 missing", mutate: func(d map[string]any) { delete(artifact(d, rt), "unpacked_sha256") }, field: "artifacts." + rt + ".unpacked_sha256"},
		{name: "unpacked_size missing", mutate: func(d map[string]any) { delete(artifact(d, rt), "unpacked_size") }, field: "artifacts." + rt + ".unpacked_size"},
		{name: "unpacked_size bool", mutate: func(d map[string]any) { artifact(d, rt)["unpacked_size"] = false }, field: "artifacts." + rt + ".unpacked_size"},

		{name: "images runtime missing", mutate: func(d map[string]any) {
			delete(sub(d, "images"), "runtime")
			delete(sub(d, "image_manifest_digests"), "runtime")
		}, field: "images.runtime"},
		{name: "images runtime malformed", mutate: func(d map[string]any) { sub(d, "images")["runtime"] = hex64('a') }, field: "images.runtime"},
		{name: "manifest digest missing", mutate: func(d map[string]any) { delete(sub(d, "image_manifest_digests"), "runtime") }, field: "image_manifest_digests.runtime"},
		{name: "manifest digest malformed", mutate: func(d map[string]any) { sub(d, "image_manifest_digests")["runtime"] = "sha512:" + hex64('a') }, field: "image_manifest_digests.runtime"},
		{name: "config digest only in manifest digests", mutate: func(d map[string]any) { sub(d, "image_manifest_digests")["web"] = "sha256:" + hex64('3') }, field: "images.web"},
		{name: "images missing", mutate: func(d map[string]any) { delete(d, "images") }, field: "images"},
		{name: "runtime_ref malformed", mutate: func(d map[string]any) { d["runtime_ref"] = "oac-runtime:latest" }, field: "runtime_ref"},
		{name: "runtime_ref other name", mutate: func(d map[string]any) { d["runtime_ref"] = "runtime@sha256:" + hex64('b') }, field: "runtime_ref"},
		{name: "microsandbox missing", mutate: func(d map[string]any) { delete(d, "microsandbox") }, field: "microsandbox"},
		{name: "microsandbox version empty", mutate: func(d map[string]any) { sub(d, "microsandbox")["version"] = "" }, field: "microsandbox.version"},
		{name: "microsandbox runtime sha bad", mutate: func(d map[string]any) { sub(d, "microsandbox")["runtime_sha256"] = "x" }, field: "microsandbox.runtime_sha256"},
		{name: "microsandbox firmware sha missing", mutate: func(d map[string]any) { delete(sub(d, "microsandbox"), "firmware_sha256") }, field: "microsandbox.firmware_sha256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.raw
			if data == nil {
				doc := manifestDoc(t)
				tt.mutate(doc)
				data = encode(t, doc)
			}
			m, err := ParseManifest(data)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("ParseManifest: %v", err)
				}
				if !bytes.Equal(m.Raw, data) {
					t.Fatal("Raw does not hold the parsed bytes")
				}
				return
			}
			wantField(t, err, ErrInvalidManifest, tt.field)
		})
	}
}

func TestParseManifestSizeLimit(t *testing.T) {
	data, err := testManifest().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	pad := func(n int) []byte {
		return append(bytes.Clone(data), bytes.Repeat([]byte(" "), n-len(data))...)
	}
	if _, err := ParseManifest(pad(MaxMetadataSize)); err != nil {
		t.Fatalf("manifest of exactly 1 MiB: %v", err)
	}
	if _, err := ParseManifest(pad(MaxMetadataSize + 1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("manifest over 1 MiB: %v, want ErrTooLarge", err)
	}
}

func TestManifestMarshal(t *testing.T) {
	m := testManifest()
	data, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(data, []byte("}\n")) || bytes.HasSuffix(data, []byte("\n\n")) {
		t.Fatalf("manifest does not end with exactly one newline: %q", data[len(data)-5:])
	}
	// The platform writes sorted keys with a 2-space indent: re-encoding
	// the document through sorted maps must give the same bytes.
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	again, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(again, '\n'), data) {
		t.Fatalf("not in sorted-key, 2-space form:\n%s\nwant\n%s", data, again)
	}
	back, err := ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	back.Raw = nil
	if !reflect.DeepEqual(back, m) {
		t.Fatalf("round trip changed the manifest:\n%+v\n%+v", back, m)
	}

	m.Platform = "linux/arm64"
	if _, err := m.Marshal(); !errors.Is(err, ErrInvalidManifest) {
		t.Fatalf("Marshal of an invalid manifest: %v", err)
	}
}

func TestConsoleArtifactBaseURL(t *testing.T) {
	for _, src := range []string{"https://console.example", "https://console.example/"} {
		got := ConsoleArtifactBaseURL(src, testCommit)
		want := "https://console.example/node-install/releases/" + testCommit + "/artifacts"
		if got != want {
			t.Errorf("ConsoleArtifactBaseURL(%q) = %q, want %q", src, got, want)
		}
	}
	if got := ArtifactURL("https://r.example/v1/", "f"); got != "https://r.example/v1/f" {
		t.Errorf("ArtifactURL = %q", got)
	}
}

func TestCheckFileName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{FileName(testCommit, "msb"), true},
		{"a.B_c-9", true},
		{"", false},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"a\\b", false},
		{"a%2f", false},
		{"ä", false},
		{strings.Repeat("a", 256), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := CheckFileName(tt.name); (err == nil) != tt.ok {
				t.Fatalf("CheckFileName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
			}
		})
	}
}
