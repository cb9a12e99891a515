package devcore

import (
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// TestAttestedImageFixture: --image-attestation publishes the same image
// (config digest) in an archive whose image index also lists an
// attestation manifest, so the release names the index digest.
func TestAttestedImageFixture(t *testing.T) {
	plain, err := BuildFixture(t.TempDir(), FixtureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fx, err := BuildFixture(t.TempDir(), FixtureOptions{ImageAttestation: true})
	if err != nil {
		t.Fatal(err)
	}
	id, err := image.Identify(fx.Image.TarPath)
	if err != nil || id != fx.Image.Identity {
		t.Fatalf("Identify = %+v, %v; want %+v", id, err, fx.Image.Identity)
	}
	if fx.Manifest.Images[release.ImageRuntime] != plain.Manifest.Images[release.ImageRuntime] ||
		fx.Manifest.ImageManifestDigests[release.ImageRuntime] != id.ManifestDigest || id.ManifestDigest == plain.Image.ManifestDigest {
		t.Fatalf("attested release names %s, %s; plain %s, %s", fx.Manifest.Images[release.ImageRuntime], fx.Manifest.ImageManifestDigests[release.ImageRuntime],
			plain.Manifest.Images[release.ImageRuntime], plain.Manifest.ImageManifestDigests[release.ImageRuntime])
	}
	if fx.SourceCommit == plain.SourceCommit {
		t.Fatal("the attested release has the plain one's source commit")
	}
}
