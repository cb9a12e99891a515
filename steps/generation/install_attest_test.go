package generation

import (
	"bytes"
	"net/http"
	"os"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/image"
	"github.com/openagentcore/oac-node-install/steps/release"
)

// TestInstallRuntimeWithAttestedArchive installs a release whose Runtime
// archive is what docker save of the containerd image store writes for a
// buildx-built image with its default attestation: an image index listing
// the linux/amd64 manifest and an attestation manifest. The release names
// the image's config digest and the index digest; the archive is verified
// against both and imported once, in either image store, and a rerun or an
// engine already holding the image (warm) neither downloads nor imports.
func TestInstallRuntimeWithAttestedArchive(t *testing.T) {
	rel := generationtest.BuildAttestedRelease(t, commitA)
	id, err := image.IdentifyReader(bytes.NewReader(rel.Bytes[PathUnpacked]))
	if err != nil || id != rel.Image || !bytes.Contains(rel.Bytes[PathUnpacked], []byte(`"vnd.docker.reference.type":"attestation-manifest"`)) {
		t.Fatalf("the attested release's archive: %+v, %v; release says %+v", id, err, rel.Image)
	}
	if rel.Manifest.ImageManifestDigests[release.ImageRuntime] != rel.Image.ManifestDigest {
		t.Fatalf("image_manifest_digests.runtime %s, want the index digest %s", rel.Manifest.ImageManifestDigests[release.ImageRuntime], rel.Image.ManifestDigest)
	}
	archive := "/node-install/releases/" + commitA + "/artifacts/" + rel.Manifest.Artifacts[release.PathRuntimeImage].Filename
	for _, store := range []string{"classic", "containerd"} {
		t.Run(store, func(t *testing.T) {
			f := newInstallFixtureFor(t, rel)
			f.docker.store = store
			if err := f.run("tok-123"); err != nil {
				t.Fatal(err)
			}
			st, err := f.docker.state()
			if err != nil || st.Loads != 1 || len(st.Images) != 1 || st.Images[0] != rel.Image {
				t.Fatalf("engine after install: %+v, %v; want one load of %+v", st, err, rel.Image)
			}
			if _, err := os.Lstat(f.root(PathUnpacked)); !os.IsNotExist(err) {
				t.Errorf("the unpacked archive stays after the import: %v", err)
			}
			gets := f.srv.Count(archive)
			if err := f.run(""); err != nil {
				t.Fatal(err)
			}
			if st, _ := f.docker.state(); st.Loads != 1 || f.srv.Count(archive) != gets {
				t.Errorf("the rerun loaded (%d loads) or downloaded (%d requests, was %d)", st.Loads, f.srv.Count(archive), gets)
			}

			// Warm: an engine that already holds the image.
			w := newInstallFixtureFor(t, rel)
			w.docker.store = store
			w.docker.add(t, rel.Image)
			if err := w.run("tok-123"); err != nil {
				t.Fatal(err)
			}
			if st, _ := w.docker.state(); st.Loads != 0 || w.srv.Count(archive) != 0 {
				t.Errorf("warm image: %d loads, %d downloads of the archive", st.Loads, w.srv.Count(archive))
			}
		})
	}
}

// newInstallFixtureFor is newInstallFixture for the release rel.
func newInstallFixtureFor(t *testing.T, rel *fixtureRelease) *installFixture {
	f := newInstallFixture(t)
	srv := newTestServer(t, rel)
	for _, name := range []string{release.ManifestName, release.SumsName} {
		data := rel.Files[name]
		srv.Serve("/node-install/"+name, func(w http.ResponseWriter, r *http.Request) { w.Write(data) })
	}
	f.srv, f.rel, f.spec = srv, rel, rel.Spec(t, release.ProviderDocker, 2)
	return f
}
