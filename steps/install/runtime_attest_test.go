package install

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
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
	id, err := image.IdentifyReader(bytes.NewReader(rel.Bytes[noderoot.PathUnpacked]))
	if err != nil || id != rel.Image || !bytes.Contains(rel.Bytes[noderoot.PathUnpacked], []byte(`"vnd.docker.reference.type":"attestation-manifest"`)) {
		t.Fatalf("the attested release's archive: %+v, %v; release says %+v", id, err, rel.Image)
	}
	if rel.Manifest.ImageManifestDigests[release.ImageRuntime] != rel.Image.ManifestDigest {
		t.Fatalf("image_manifest_digests.runtime %s, want the index digest %s", rel.Manifest.ImageManifestDigests[release.ImageRuntime], rel.Image.ManifestDigest)
	}
	archive := "/node-install/releases/" + commitA + "/artifacts/" + rel.Manifest.Artifacts[release.PathRuntimeImage].Filename
	for _, store := range []string{"classic", "containerd"} {
		t.Run(store, func(t *testing.T) {
			f := newInstallFixtureFor(t, rel)
			f.docker.ContainerdStore = store == "containerd"
			if err := f.run("tok-123"); err != nil {
				t.Fatal(err)
			}
			st, err := f.docker.State()
			if err != nil || st.Loads != 1 || len(st.Images) != 1 || st.Images[0] != rel.Image {
				t.Fatalf("engine after install: %+v, %v; want one load of %+v", st, err, rel.Image)
			}
			if _, err := os.Lstat(f.root(noderoot.PathUnpacked)); !os.IsNotExist(err) {
				t.Errorf("the unpacked archive stays after the import: %v", err)
			}
			gets := f.srv.Count(archive)
			if err := f.run(""); err != nil {
				t.Fatal(err)
			}
			if st, _ := f.docker.State(); st.Loads != 1 || f.srv.Count(archive) != gets {
				t.Errorf("the rerun loaded (%d loads) or downloaded (%d requests, was %d)", st.Loads, f.srv.Count(archive), gets)
			}

			// Warm: an engine that already holds the image.
			w := newInstallFixtureFor(t, rel)
			w.docker.ContainerdStore = store == "containerd"
			if err := w.docker.AddImage(rel.Image); err != nil {
				t.Fatal(err)
			}
			if err := w.run("tok-123"); err != nil {
				t.Fatal(err)
			}
			if st, _ := w.docker.State(); st.Loads != 0 || w.srv.Count(archive) != 0 {
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

// countingDocker is the machine's engine, counting loads.
type countingDocker struct {
	*docker.Client
	loads int
}

func (c *countingDocker) ImageLoadReader(ctx context.Context, r io.Reader, name string) error {
	c.loads++
	return c.Client.ImageLoadReader(ctx, r, name)
}

// TestInstallRuntimeAttestedWithTheDockerEngine runs the install steps up to
// the runtime step against the machine's Docker Engine with an attested
// Runtime archive: the installer verifies the archive against the config
// digest and the index digest, loads it once, and the engine resolves it
// (Docker 20.10, classic store: under the config digest). A rerun finds
// the image held: it neither downloads the archive nor loads it.
func TestInstallRuntimeAttestedWithTheDockerEngine(t *testing.T) {
	rel := generationtest.BuildUniqueAttestedRelease(t)
	dk := generationtest.MachineEngine(t, rel)
	cx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newInstallFixtureFor(t, rel)
	engine := &countingDocker{Client: dk}
	archive := "/node-install/releases/" + rel.Commit + "/artifacts/" + rel.Manifest.Artifacts[release.PathRuntimeImage].Filename
	run := func() workflow.Facts {
		t.Helper()
		if err := EnsureNodeRoot(f.home, nodeTestID, os.Getuid()); err != nil {
			t.Fatal(err)
		}
		opts := f.options()
		opts.Docker = func(context.Context, string) (noderoot.Docker, error) { return engine, nil }
		e, err := NewNodeEnv(cx, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		e.SetToken("tok-123")
		steps := nodeSteps(e)
		facts := workflow.Facts{}
		for _, st := range []workflow.State{workflow.InstallNodeRoot, workflow.InstallMetadata, workflow.InstallDownloads, workflow.InstallHelper,
			workflow.InstallLease, workflow.InstallRuntime} {
			res, err := steps[st].Run(cx, facts)
			if err != nil {
				t.Fatalf("%s: %v", st, err)
			}
			for k, v := range res.Facts {
				facts[k] = v
			}
		}
		return facts
	}
	facts := run()
	id := facts[factImageID]
	if engine.loads != 1 || (id != rel.Image.ConfigDigest && id != rel.Image.ManifestDigest) || f.srv.Count(archive) == 0 {
		t.Fatalf("install: %d loads, image %q, %d downloads; want one load of %+v", engine.loads, id, f.srv.Count(archive), rel.Image)
	}
	if _, goos, arch, err := dk.ImageInspect(cx, id); err != nil || goos != "linux" || arch != "amd64" {
		t.Fatalf("the engine does not hold %s: %s/%s %v", id, goos, arch, err)
	}
	gets := f.srv.Count(archive)
	facts = run()
	if engine.loads != 1 || f.srv.Count(archive) != gets || facts[factImageID] != id || facts[factWarm] != "true" {
		t.Errorf("rerun: %d loads, %d downloads (was %d), facts %v", engine.loads, f.srv.Count(archive), gets, facts)
	}
	t.Logf("engine API %s: the archive (config %s, index %s) loaded as %s", dk.APIVersion(), rel.Image.ConfigDigest, rel.Image.ManifestDigest, id)
}
