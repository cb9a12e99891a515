package image_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/image/imagetest"
)

// Positions of the entries of a fixture archive with an attestation
// (imagetest.Options.Attestation; see imagetest.Image.Entries).
const (
	atAttestLayer = atManifest + 1 + iota
	atAttestConfig
	atAttestManifest
	atAttestIndex
	atAttestIndexJSON
)

// TestFixtureAttestation reads the buildx-like archive independently of the
// scanner: index.json → image index → the linux/amd64 manifest and an
// attestation manifest whose layer is an in-toto statement about it.
func TestFixtureAttestation(t *testing.T) {
	archive, built := buildArchive(t, imagetest.Options{Label: "attest", Attestation: true}, nil, nil)
	files := readEntries(t, archive)
	blobOf := func(d string) []byte {
		t.Helper()
		b, ok := files["blobs/sha256/"+strings.TrimPrefix(d, "sha256:")]
		if !ok || sha(b) != d {
			t.Fatalf("blob %s missing or not hashing to its name", d)
		}
		return b
	}
	type desc struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Platform    *ocispec.Platform `json:"platform"`
		Annotations map[string]string `json:"annotations"`
	}
	var top, ix struct{ Manifests []desc }
	if err := json.Unmarshal(files["index.json"], &top); err != nil || len(top.Manifests) != 1 {
		t.Fatalf("index.json: %v %s", err, files["index.json"])
	}
	if top.Manifests[0].MediaType != ocispec.MediaTypeImageIndex || top.Manifests[0].Digest != built.ManifestDigest {
		t.Fatalf("index.json lists %+v, want the image index %s", top.Manifests[0], built.ManifestDigest)
	}
	if err := json.Unmarshal(blobOf(built.ManifestDigest), &ix); err != nil || len(ix.Manifests) != 2 {
		t.Fatalf("image index: %v %+v", err, ix)
	}
	img, att := ix.Manifests[0], ix.Manifests[1]
	if img.Platform == nil || img.Platform.OS != "linux" || img.Platform.Architecture != "amd64" || img.Annotations != nil {
		t.Fatalf("image descriptor %+v", img)
	}
	if att.Platform == nil || att.Platform.OS != "unknown" || att.Platform.Architecture != "unknown" ||
		att.Annotations["vnd.docker.reference.type"] != "attestation-manifest" || att.Annotations["vnd.docker.reference.digest"] != img.Digest {
		t.Fatalf("attestation descriptor %+v", att)
	}
	var m, am struct {
		Config desc
		Layers []desc
	}
	json.Unmarshal(blobOf(img.Digest), &m)
	if m.Config.Digest != built.ConfigDigest {
		t.Fatalf("image config %s, builder says %s", m.Config.Digest, built.ConfigDigest)
	}
	json.Unmarshal(blobOf(att.Digest), &am)
	if len(am.Layers) != 1 || am.Layers[0].MediaType != "application/vnd.in-toto+json" {
		t.Fatalf("attestation manifest %+v", am)
	}
	var cfg struct{ OS, Architecture string }
	json.Unmarshal(blobOf(am.Config.Digest), &cfg)
	if cfg.OS != "unknown" || cfg.Architecture != "unknown" {
		t.Fatalf("attestation config %+v", cfg)
	}
	var st struct {
		Type    string `json:"_type"`
		Subject []struct{ Digest map[string]string }
	}
	if err := json.Unmarshal(blobOf(am.Layers[0].Digest), &st); err != nil || len(st.Subject) != 1 || "sha256:"+st.Subject[0].Digest["sha256"] != img.Digest {
		t.Fatalf("in-toto statement %+v, %v", st, err)
	}
	// manifest.json names only the image, as docker save writes it.
	var legacy []imagetest.LegacyEntry
	if err := json.Unmarshal(files["manifest.json"], &legacy); err != nil || len(legacy) != 1 || legacy[0].Config != "blobs/sha256/"+strings.TrimPrefix(built.ConfigDigest, "sha256:") {
		t.Fatalf("manifest.json %s", files["manifest.json"])
	}
	if _, plain := buildArchive(t, imagetest.Options{Label: "attest"}, nil, nil); plain.ConfigDigest != built.ConfigDigest || plain.ManifestDigest != img.Digest {
		t.Fatalf("plain archive %+v; the attested one has config %s, manifest %s", plain, built.ConfigDigest, img.Digest)
	}
}

// TestIdentifyAttestation is the table of what an image index may list
// besides the linux/amd64 image: attestation manifests as buildx adds them,
// and nothing else.
func TestIdentifyAttestation(t *testing.T) {
	_, plain := buildArchive(t, imagetest.Options{Label: "attest"}, nil, nil)
	imageDigest := digest.Digest(plain.ManifestDigest) // the platform manifest, same in both
	other := digest.Digest("sha256:" + strings.Repeat("ab", 32))
	unknown := &ocispec.Platform{OS: "unknown", Architecture: "unknown"}
	secondAttestation := func(ix *ocispec.Index) {
		d := ix.Manifests[1]
		d.Digest, d.Size = other, 321 // an SBOM attestation whose blobs were not saved
		ix.Manifests = append(ix.Manifests, d)
	}
	cases := []struct {
		name    string
		edit    func(*imagetest.Image)
		entries func([]imagetest.Entry) []imagetest.Entry
		want    error
	}{
		{name: "buildx default", want: nil},
		{name: "attestation blobs absent", edit: func(f *imagetest.Image) { f.OmitAttestationBlobs = true }, want: nil},
		{name: "attestation listed first", edit: func(f *imagetest.Image) {
			f.EditNested = func(ix *ocispec.Index) { ix.Manifests[0], ix.Manifests[1] = ix.Manifests[1], ix.Manifests[0] }
		}, want: nil},
		{name: "two attestations", edit: func(f *imagetest.Image) { f.EditNested = secondAttestation }, want: nil},
		{name: "attestation without reference digest", edit: func(f *imagetest.Image) {
			f.EditAttestation = func(d *ocispec.Descriptor) { delete(d.Annotations, "vnd.docker.reference.digest") }
		}, want: nil},
		{name: "tagged", edit: func(f *imagetest.Image) { f.Tag = "oac-runtime:fixture" }, want: nil},

		{name: "unknown/unknown without the annotation", edit: func(f *imagetest.Image) {
			f.EditAttestation = func(d *ocispec.Descriptor) { delete(d.Annotations, "vnd.docker.reference.type") }
		}, want: image.ErrPlatform},
		{name: "unknown/unknown with another reference type", edit: func(f *imagetest.Image) {
			f.EditAttestation = func(d *ocispec.Descriptor) { d.Annotations["vnd.docker.reference.type"] = "signature" }
		}, want: image.ErrPlatform},
		{name: "annotation on linux/amd64", edit: func(f *imagetest.Image) {
			f.EditAttestation = func(d *ocispec.Descriptor) { d.Platform = &ocispec.Platform{OS: "linux", Architecture: "amd64"} }
		}, want: image.ErrPlatform},
		{name: "annotation on linux/arm64", edit: func(f *imagetest.Image) {
			f.EditAttestation = func(d *ocispec.Descriptor) { d.Platform = &ocispec.Platform{OS: "linux", Architecture: "arm64"} }
		}, want: image.ErrPlatform},
		{name: "annotation without platform", edit: func(f *imagetest.Image) {
			f.EditAttestation = func(d *ocispec.Descriptor) { d.Platform = nil }
		}, want: image.ErrPlatform},
		{name: "annotation on the image descriptor", edit: func(f *imagetest.Image) {
			f.EditNested = func(ix *ocispec.Index) {
				ix.Manifests[0].Annotations = map[string]string{"vnd.docker.reference.type": "attestation-manifest"}
			}
		}, want: image.ErrPlatform},
		{name: "unknown/unknown variant", edit: func(f *imagetest.Image) {
			f.EditAttestation = func(d *ocispec.Descriptor) {
				d.Platform = &ocispec.Platform{OS: "unknown", Architecture: "unknown", Variant: "v1"}
			}
		}, want: image.ErrPlatform},
		{name: "two linux/amd64 images", edit: func(f *imagetest.Image) {
			f.EditNested = func(ix *ocispec.Index) {
				d := ix.Manifests[0]
				d.Digest = other
				ix.Manifests = append(ix.Manifests, d)
			}
		}, want: image.ErrPlatform},
		{name: "the image twice", edit: func(f *imagetest.Image) {
			f.EditNested = func(ix *ocispec.Index) { ix.Manifests = append(ix.Manifests, ix.Manifests[0]) }
		}, want: image.ErrPlatform},
		{name: "no linux/amd64 image", edit: func(f *imagetest.Image) {
			f.EditNested = func(ix *ocispec.Index) { ix.Manifests = ix.Manifests[1:] }
		}, want: image.ErrPlatform},
		{name: "an arm64 image besides", edit: func(f *imagetest.Image) {
			f.NestedExtra = []ocispec.Descriptor{{MediaType: ocispec.MediaTypeImageManifest, Digest: other, Size: 10, Platform: &ocispec.Platform{OS: "linux", Architecture: "arm64"}}}
		}, want: image.ErrPlatform},
		{name: "attestation of a manifest not in the index", edit: func(f *imagetest.Image) {
			f.EditAttestation = func(d *ocispec.Descriptor) { d.Annotations["vnd.docker.reference.digest"] = other.String() }
		}, want: image.ErrInconsistent},
		{name: "attestation of another attestation", edit: func(f *imagetest.Image) {
			f.EditNested = func(ix *ocispec.Index) {
				secondAttestation(ix)
				ix.Manifests[2].Annotations = map[string]string{"vnd.docker.reference.type": "attestation-manifest", "vnd.docker.reference.digest": ix.Manifests[1].Digest.String()}
			}
		}, want: image.ErrInconsistent},
		{name: "the image as its own attestation", edit: func(f *imagetest.Image) {
			f.EditNested = func(ix *ocispec.Index) {
				ix.Manifests[1].Digest, ix.Manifests[1].Size = ix.Manifests[0].Digest, ix.Manifests[0].Size
			}
		}, want: image.ErrInconsistent},
		{name: "attestation reference digest malformed", edit: func(f *imagetest.Image) {
			f.EditAttestation = func(d *ocispec.Descriptor) {
				d.Annotations["vnd.docker.reference.digest"] = strings.ToUpper(imageDigest.String())
			}
		}, want: image.ErrInconsistent},
		{name: "attestation is not a manifest", edit: func(f *imagetest.Image) {
			f.EditAttestation = func(d *ocispec.Descriptor) { d.MediaType = imagetest.MediaTypeInToto }
		}, want: image.ErrMalformed},
		{name: "attestation digest malformed", edit: func(f *imagetest.Image) {
			f.OmitAttestationBlobs = true
			f.EditAttestation = func(d *ocispec.Descriptor) { d.Digest = "sha256:00" }
		}, want: image.ErrMalformed},
		{name: "attestation size differs from its blob", edit: func(f *imagetest.Image) {
			f.EditAttestation = func(d *ocispec.Descriptor) { d.Size++ }
		}, want: image.ErrBlobMismatch},
		{name: "attestation statement tampered", entries: replaceAt(atAttestLayer, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`in-toto`), []byte(`in-totO`), 1)
		}), want: image.ErrBlobMismatch},
		{name: "attestation in index.json beside the image", edit: func(f *imagetest.Image) {
			f.EditIndex = func(ix *ocispec.Index) {
				ix.Manifests = append(ix.Manifests, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: other, Size: 10, Platform: unknown,
					Annotations: map[string]string{"vnd.docker.reference.type": "attestation-manifest"}})
			}
		}, want: image.ErrPlatform},
		// The image index is decoded by the strict decoder too.
		{name: "annotation key twice", edit: func(f *imagetest.Image) {
			f.EditNestedJSON = func(b []byte) []byte {
				return bytes.Replace(b, []byte(`"vnd.docker.reference.type":`), []byte(`"vnd.docker.reference.type":"x","vnd.docker.reference.type":`), 1)
			}
		}, want: image.ErrMalformed},
		{name: "annotation not a string", edit: func(f *imagetest.Image) {
			f.EditNestedJSON = func(b []byte) []byte {
				return bytes.Replace(b, []byte(`"vnd.docker.reference.type":"attestation-manifest"`), []byte(`"vnd.docker.reference.type":["attestation-manifest"]`), 1)
			}
		}, want: image.ErrMalformed},
		{name: "platform null", edit: func(f *imagetest.Image) {
			f.EditNestedJSON = func(b []byte) []byte {
				return bytes.Replace(b, []byte(`"platform":{"architecture":"unknown","os":"unknown"}`), []byte(`"platform":null`), 1)
			}
		}, want: image.ErrMalformed},
		{name: "platform key in other case", edit: func(f *imagetest.Image) {
			f.EditNestedJSON = func(b []byte) []byte {
				return bytes.Replace(b, []byte(`"os":"unknown"`), []byte(`"OS":"unknown"`), 1)
			}
		}, want: image.ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			archive, built := buildArchive(t, imagetest.Options{Label: "attest", Attestation: true}, c.edit, c.entries)
			got, err := image.IdentifyReader(bytes.NewReader(archive))
			if c.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got != built || got.ConfigDigest != plain.ConfigDigest || got.ManifestDigest == plain.ManifestDigest {
					t.Fatalf("Identify = %+v; want %+v: the image's config and the index digest", got, built)
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

// TestVerifyAttestedFile: the release names the index digest; the digest
// of the platform manifest inside it is another identity, refused.
func TestVerifyAttestedFile(t *testing.T) {
	dir := t.TempDir()
	fx, err := imagetest.WriteFixture(dir, imagetest.Options{Label: "attested file", Attestation: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := image.Verify(fx.TarPath, fx.ConfigDigest, fx.ManifestDigest); err != nil {
		t.Fatal(err)
	}
	_, plain := buildArchive(t, imagetest.Options{Label: "attested file"}, nil, nil)
	if err := image.Verify(fx.TarPath, fx.ConfigDigest, plain.ManifestDigest); !errors.Is(err, image.ErrIdentityMismatch) {
		t.Fatalf("verified against the platform manifest digest: %v", err)
	}
	id, err := image.UnpackIdentify(fx.GzPath, dir+"/unpacked.tar", fx.TarSize, fx.TarSHA256)
	if err != nil || id != fx.Identity {
		t.Fatalf("UnpackIdentify = %+v, %v; want %+v", id, err, fx.Identity)
	}
}
