package image_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/image/imagetest"
)

// buildArchive writes the fixture image's archive after edit changed its
// parts and then its entries.
func buildArchive(t *testing.T, opts imagetest.Options, edit func(*imagetest.Image), editEntries func([]imagetest.Entry) []imagetest.Entry) ([]byte, image.Identity) {
	t.Helper()
	img, err := imagetest.NewImage(opts)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(img)
	}
	es, id, err := img.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if editEntries != nil {
		es = editEntries(es)
	}
	var b bytes.Buffer
	if err := imagetest.WriteArchive(&b, es); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), id
}

// readEntries returns the regular files of a tar archive by name.
func readEntries(t *testing.T, archive []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[hdr.Name] = b
		}
	}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// TestFixtureIdentity recomputes both identities from the archive bytes
// independently of the scanner and compares them with image.Identify's.
func TestFixtureIdentity(t *testing.T) {
	archive, built := buildArchive(t, imagetest.Options{Label: "identity", RepoTag: "oac-runtime:fixture"}, nil, nil)
	files := readEntries(t, archive)
	var ix struct {
		Manifests []struct{ Digest string } `json:"manifests"`
	}
	if err := json.Unmarshal(files["index.json"], &ix); err != nil || len(ix.Manifests) != 1 {
		t.Fatalf("index.json: %v %s", err, files["index.json"])
	}
	mdig := ix.Manifests[0].Digest
	mbytes := files["blobs/sha256/"+strings.TrimPrefix(mdig, "sha256:")]
	if sha(mbytes) != mdig {
		t.Fatalf("manifest blob does not hash to %s", mdig)
	}
	var m struct {
		Config struct{ Digest string } `json:"config"`
	}
	if err := json.Unmarshal(mbytes, &m); err != nil {
		t.Fatal(err)
	}
	cbytes := files["blobs/sha256/"+strings.TrimPrefix(m.Config.Digest, "sha256:")]
	if sha(cbytes) != m.Config.Digest {
		t.Fatalf("config blob does not hash to %s", m.Config.Digest)
	}
	want := image.Identity{ConfigDigest: m.Config.Digest, ManifestDigest: mdig}
	if built != want {
		t.Fatalf("builder says %+v, archive says %+v", built, want)
	}
	got, err := image.IdentifyReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("Identify = %+v, want %+v", got, want)
	}

	// Equal options give equal bytes; another label another identity.
	again, _ := buildArchive(t, imagetest.Options{Label: "identity", RepoTag: "oac-runtime:fixture"}, nil, nil)
	if !bytes.Equal(again, archive) {
		t.Fatal("the fixture archive is not deterministic")
	}
	_, other := buildArchive(t, imagetest.Options{Label: "other"}, nil, nil)
	if other.ConfigDigest == want.ConfigDigest || other.ManifestDigest == want.ManifestDigest {
		t.Fatal("different labels gave the same identity")
	}
}

func TestIdentifyNestedIndex(t *testing.T) {
	archive, built := buildArchive(t, imagetest.Options{Label: "nested"}, func(f *imagetest.Image) { f.Nested = true }, nil)
	got, err := image.IdentifyReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	if got != built {
		t.Fatalf("Identify = %+v, want %+v", got, built)
	}
	_, plain := buildArchive(t, imagetest.Options{Label: "nested"}, nil, nil)
	if got.ConfigDigest != plain.ConfigDigest || got.ManifestDigest == plain.ManifestDigest {
		t.Fatalf("nested index: want the same config and the index digest, got %+v vs %+v", got, plain)
	}
}

// Positions of the fixture archive's entries (see imagetest.Image.Entries).
const (
	atLayer1 = 2 + iota
	atLayer2
	atConfig
	atManifest
	atIndex
	atLegacy
	atLayout
)

// replaceAt rewrites the content of entry i, keeping its name.
func replaceAt(i int, f func([]byte) []byte) func([]imagetest.Entry) []imagetest.Entry {
	return func(es []imagetest.Entry) []imagetest.Entry {
		b, _ := io.ReadAll(es[i].Open())
		es[i] = imagetest.BytesEntry(es[i].Name, f(b))
		return es
	}
}

func dropEntry(match func(i int, e imagetest.Entry) bool) func([]imagetest.Entry) []imagetest.Entry {
	return func(es []imagetest.Entry) []imagetest.Entry {
		var out []imagetest.Entry
		for i, e := range es {
			if !match(i, e) {
				out = append(out, e)
			}
		}
		return out
	}
}

func TestIdentifyRefuses(t *testing.T) {
	flip := func(off int) func([]byte) []byte {
		return func(b []byte) []byte { b = bytes.Clone(b); b[off%len(b)] ^= 1; return b }
	}
	arm := &ocispec.Platform{Architecture: "arm64", OS: "linux"}
	cases := []struct {
		name    string
		edit    func(*imagetest.Image)
		entries func([]imagetest.Entry) []imagetest.Entry
		want    error
	}{
		{name: "tampered config", entries: replaceAt(atConfig, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"io.oac.fixture":"refuse"`), []byte(`"io.oac.fixture":"refusE"`), 1)
		}), want: image.ErrBlobMismatch},
		{name: "tampered layer byte", entries: replaceAt(atLayer2, flip(700)), want: image.ErrBlobMismatch},
		{name: "tampered first layer byte", entries: replaceAt(atLayer1, flip(1030)), want: image.ErrBlobMismatch},
		{name: "tampered manifest", entries: replaceAt(atManifest, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"schemaVersion":2`), []byte(`"schemaVersion":2 `), 1)
		}), want: image.ErrBlobMismatch},
		{name: "layer size differs from descriptor", edit: func(f *imagetest.Image) {
			f.EditManifest = func(m *ocispec.Manifest) { m.Layers[1].Size++ }
		}, want: image.ErrBlobMismatch},
		{name: "config size differs from descriptor", edit: func(f *imagetest.Image) {
			f.EditManifest = func(m *ocispec.Manifest) { m.Config.Size-- }
		}, want: image.ErrBlobMismatch},
		{name: "manifest size differs from index", edit: func(f *imagetest.Image) {
			f.EditIndex = func(ix *ocispec.Index) { ix.Manifests[0].Size += 2 }
		}, want: image.ErrBlobMismatch},
		{name: "missing layer blob", entries: dropEntry(func(i int, _ imagetest.Entry) bool { return i == atLayer2 }), want: image.ErrMissingBlob},
		{name: "missing config blob", entries: dropEntry(func(i int, _ imagetest.Entry) bool { return i == atConfig }), want: image.ErrMissingBlob},
		{name: "missing manifest blob", entries: dropEntry(func(i int, _ imagetest.Entry) bool { return i == atManifest }), want: image.ErrMissingBlob},
		{name: "two images in index.json", edit: func(f *imagetest.Image) {
			f.EditIndex = func(ix *ocispec.Index) {
				d := ix.Manifests[0]
				d.Digest = digest.Digest("sha256:" + strings.Repeat("ab", 32))
				ix.Manifests = append(ix.Manifests, d)
			}
		}, want: image.ErrPlatform},
		{name: "same image twice in index.json", edit: func(f *imagetest.Image) {
			f.EditIndex = func(ix *ocispec.Index) { ix.Manifests = append(ix.Manifests, ix.Manifests[0]) }
		}, want: nil},
		{name: "index.json lists arm64", edit: func(f *imagetest.Image) {
			f.EditIndex = func(ix *ocispec.Index) { ix.Manifests[0].Platform = arm }
		}, want: image.ErrPlatform},
		{name: "config for arm64", edit: func(f *imagetest.Image) { f.Config["architecture"] = "arm64" }, want: image.ErrPlatform},
		{name: "config for windows", edit: func(f *imagetest.Image) { f.Config["os"] = "windows" }, want: image.ErrPlatform},
		{name: "config amd64 variant", edit: func(f *imagetest.Image) { f.Config["variant"] = "v3" }, want: image.ErrPlatform},
		{name: "nested index with two platforms", edit: func(f *imagetest.Image) {
			f.Nested = true
			f.NestedExtra = []ocispec.Descriptor{{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest("sha256:" + strings.Repeat("cd", 32)), Size: 10, Platform: arm}}
		}, want: image.ErrPlatform},
		{name: "legacy manifest.json layers swapped", edit: func(f *imagetest.Image) {
			f.EditLegacy = func(l *[]imagetest.LegacyEntry) { e := &(*l)[0]; e.Layers[0], e.Layers[1] = e.Layers[1], e.Layers[0] }
		}, want: image.ErrInconsistent},
		{name: "legacy manifest.json config elsewhere", edit: func(f *imagetest.Image) {
			f.EditLegacy = func(l *[]imagetest.LegacyEntry) { (*l)[0].Config = "0123.json" }
		}, want: image.ErrInconsistent},
		{name: "legacy manifest.json lacks a layer", edit: func(f *imagetest.Image) {
			f.EditLegacy = func(l *[]imagetest.LegacyEntry) { (*l)[0].Layers = (*l)[0].Layers[:1] }
		}, want: image.ErrInconsistent},
		{name: "legacy manifest.json two images", edit: func(f *imagetest.Image) {
			f.EditLegacy = func(l *[]imagetest.LegacyEntry) { *l = append(*l, (*l)[0]) }
		}, want: image.ErrPlatform},
		{name: "no legacy manifest.json", entries: dropEntry(func(i int, _ imagetest.Entry) bool { return i == atLegacy }), want: image.ErrMalformed},
		{name: "diff_ids differ from layers", edit: func(f *imagetest.Image) {
			f.Config["rootfs"] = map[string]any{"type": "layers", "diff_ids": []digest.Digest{f.Layers[0].Digest, f.Layers[0].Digest}}
		}, want: image.ErrInconsistent},
		{name: "diff_ids too few", edit: func(f *imagetest.Image) {
			f.Config["rootfs"] = map[string]any{"type": "layers", "diff_ids": []digest.Digest{f.Layers[0].Digest}}
		}, want: image.ErrInconsistent},
		{name: "unknown layer media type", edit: func(f *imagetest.Image) {
			f.EditManifest = func(m *ocispec.Manifest) {
				m.Layers[0].MediaType = "application/vnd.oci.image.layer.nondistributable.v1.tar"
			}
		}, want: image.ErrMalformed},
		{name: "no oci-layout", entries: dropEntry(func(i int, _ imagetest.Entry) bool { return i == atLayout }), want: image.ErrMalformed},
		{name: "no index.json", entries: dropEntry(func(i int, _ imagetest.Entry) bool { return i == atIndex }), want: image.ErrMalformed},
		{name: "index.json twice", entries: func(es []imagetest.Entry) []imagetest.Entry {
			return append(es, imagetest.BytesEntry("./index.json", []byte(`{"schemaVersion":2,"manifests":[]}`)))
		}, want: image.ErrMalformed},
		{name: "blob twice", entries: func(es []imagetest.Entry) []imagetest.Entry { return append(es, es[atLayer2]) }, want: image.ErrMalformed},
		{name: "blob is a symbolic link", entries: func(es []imagetest.Entry) []imagetest.Entry {
			es[atLayer2] = imagetest.Entry{Name: es[atLayer2].Name, Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}
			return es
		}, want: image.ErrMalformed},
		{name: "unsafe entry name", entries: func(es []imagetest.Entry) []imagetest.Entry {
			return append(es, imagetest.BytesEntry("../escape", []byte("x")))
		}, want: image.ErrMalformed},
		{name: "index.json not JSON", entries: replaceAt(atIndex, func([]byte) []byte { return []byte("{") }), want: image.ErrMalformed},
		{name: "index.json wrong schema", edit: func(f *imagetest.Image) {
			f.EditIndex = func(ix *ocispec.Index) { ix.SchemaVersion = 1 }
		}, want: image.ErrMalformed},
		{name: "index.json lists no image", edit: func(f *imagetest.Image) {
			f.EditIndex = func(ix *ocispec.Index) { ix.Manifests = nil }
		}, want: image.ErrMalformed},
		{name: "index.json bad digest", edit: func(f *imagetest.Image) {
			f.EditIndex = func(ix *ocispec.Index) { ix.Manifests[0].Digest = "sha512:00" }
		}, want: image.ErrMalformed},

		// The records are decoded strictly (journal/strictjson), with the
		// unknown keys the OCI spec tells readers to ignore.
		{name: "unknown keys and annotations", edit: func(f *imagetest.Image) {
			f.Config["future"] = nil // Docker writes null for unset container settings
			f.EditManifest = func(m *ocispec.Manifest) {
				m.Annotations = map[string]string{ocispec.AnnotationCreated: "2020-01-01T00:00:00Z"}
				m.Config.URLs = []string{"https://example.com/config"}
			}
			f.EditIndex = func(ix *ocispec.Index) { ix.Annotations = map[string]string{"io.oac.note": "x"} }
		}, entries: replaceAt(atIndex, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`{"schemaVersion":2,`), []byte(`{"schemaVersion":2,"x-future":{"k":[null,1.5]},`), 1)
		}), want: nil},
		{name: "index.json key twice", entries: replaceAt(atIndex, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"schemaVersion":2,`), []byte(`"schemaVersion":2,"schemaVersion":2,`), 1)
		}), want: image.ErrMalformed},
		{name: "index.json key in other case", entries: replaceAt(atIndex, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"manifests"`), []byte(`"Manifests"`), 1)
		}), want: image.ErrMalformed},
		{name: "index.json null platform", entries: replaceAt(atIndex, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"size":`), []byte(`"platform":null,"size":`), 1)
		}), want: image.ErrMalformed},
		{name: "index.json fractional size", entries: replaceAt(atIndex, func(b []byte) []byte {
			i := bytes.Index(b, []byte(`"size":`)) + len(`"size":`)
			j := i + bytes.IndexAny(b[i:], ",}")
			return append(append(append([]byte(nil), b[:j]...), ".0"...), b[j:]...)
		}), want: image.ErrMalformed},
		{name: "legacy manifest.json key twice", entries: replaceAt(atLegacy, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"Config":`), []byte(`"Config":"x","Config":`), 1)
		}), want: image.ErrMalformed},
		// image-spec's Descriptor.Data is base64 in JSON; the strict decoder
		// reads a []byte as an array of integers, so a descriptor that
		// embeds its content is refused. docker save never embeds one.
		{name: "descriptor with embedded data", edit: func(f *imagetest.Image) {
			f.EditIndex = func(ix *ocispec.Index) { ix.Manifests[0].Data = []byte("{}") }
		}, want: image.ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			archive, _ := buildArchive(t, imagetest.Options{Label: "refuse"}, c.edit, c.entries)
			_, err := image.IdentifyReader(bytes.NewReader(archive))
			if c.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			t.Log(err)
		})
	}
}

func TestIdentifyTruncatedAndGarbage(t *testing.T) {
	archive, _ := buildArchive(t, imagetest.Options{Label: "cut"}, nil, nil)
	for _, n := range []int{0, 100, 512, 1500, len(archive) / 2, len(archive) - 2600} {
		if _, err := image.IdentifyReader(bytes.NewReader(archive[:n])); !errors.Is(err, image.ErrMalformed) {
			t.Errorf("archive cut at %d: got %v, want ErrMalformed", n, err)
		}
	}
	if _, err := image.IdentifyReader(strings.NewReader(strings.Repeat("not a tar ", 200))); !errors.Is(err, image.ErrMalformed) {
		t.Errorf("garbage: got %v", err)
	}
}

func TestIdentifyReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	_, err := image.IdentifyReader(io.MultiReader(strings.NewReader(strings.Repeat("\x00", 100)), &failReader{boom}))
	if !errors.Is(err, boom) || errors.Is(err, image.ErrMalformed) {
		t.Fatalf("got %v, want the read error, not a malformed archive", err)
	}
}

type failReader struct{ err error }

func (f *failReader) Read([]byte) (int, error) { return 0, f.err }

func TestIdentifyAndVerifyFile(t *testing.T) {
	dir := t.TempDir()
	fx, err := imagetest.WriteFixture(dir, imagetest.Options{Label: "file", PayloadSize: 3 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fx.TarPath, fx.GzPath} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", p, err, st.Mode())
		}
	}
	tarBytes, _ := os.ReadFile(fx.TarPath)
	if int64(len(tarBytes)) != fx.TarSize || sha(tarBytes) != "sha256:"+fx.TarSHA256 {
		t.Fatal("imagetest.WriteFixture reported another size or sha256 for runtime.tar")
	}
	id, err := image.Identify(fx.TarPath)
	if err != nil || id != fx.Identity {
		t.Fatalf("Identify = %+v, %v; want %+v", id, err, fx.Identity)
	}
	if err := image.Verify(fx.TarPath, fx.ConfigDigest, fx.ManifestDigest); err != nil {
		t.Fatal(err)
	}
	other := "sha256:" + strings.Repeat("0", 64)
	cases := []struct {
		name             string
		config, manifest string
		want             error
	}{
		{"other config", other, fx.ManifestDigest, image.ErrIdentityMismatch},
		{"other manifest", fx.ConfigDigest, other, image.ErrIdentityMismatch},
		{"swapped", fx.ManifestDigest, fx.ConfigDigest, image.ErrIdentityMismatch},
		{"malformed", "sha256:XYZ", fx.ManifestDigest, image.ErrBadDigest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := image.Verify(fx.TarPath, c.config, c.manifest); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}

	link := filepath.Join(dir, "link.tar")
	os.Symlink(fx.TarPath, link)
	if _, err := image.Identify(link); err == nil {
		t.Fatal("Identify followed a symbolic link")
	}
}
