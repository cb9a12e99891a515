package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/image/imagetest"
)

// engine returns the adapter for the machine's Docker Engine, or skips.
// The raw client is for cleanup only: the adapter cannot remove images.
func engine(t *testing.T) (*docker.Client, *client.Client) {
	t.Helper()
	if _, err := os.Stat("/var/run/docker.sock"); err != nil {
		t.Skip("no Docker Engine socket at /var/run/docker.sock")
	}
	c := newClient(t, docker.DefaultHost)
	if _, err := c.Info(ctx(t)); err != nil {
		t.Skipf("the Docker Engine does not answer: %v", err)
	}
	raw, err := client.New(client.WithHost(docker.DefaultHost))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return c, raw
}

// removeImages removes the test's images from the engine, by ID, and
// checks that none is left.
func removeImages(t *testing.T, raw *client.Client, ids ...string) {
	t.Cleanup(func() {
		cx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, id := range ids {
			raw.ImageRemove(cx, id, client.ImageRemoveOptions{Force: true, PruneChildren: true})
			if _, err := raw.ImageInspect(cx, id); err == nil {
				t.Errorf("cleanup: image %s is still in the engine", id)
			}
		}
	})
}

func TestEngineLoadAndResolve(t *testing.T) {
	c, raw := engine(t)
	fx, err := imagetest.WriteFixture(t.TempDir(), imagetest.Options{Label: "oac-test-" + uuid.NewString()})
	if err != nil {
		t.Fatal(err)
	}
	removeImages(t, raw, fx.ConfigDigest, fx.ManifestDigest)

	if _, found, err := image.Resolve(ctx(t), c, fx.Identity); err != nil || found {
		t.Fatalf("before load: found %v, %v", found, err)
	}
	if err := image.Verify(fx.TarPath, fx.ConfigDigest, fx.ManifestDigest); err != nil {
		t.Fatal(err)
	}
	if err := c.ImageLoad(ctx(t), fx.TarPath); err != nil {
		t.Fatal(err)
	}
	id, found, err := image.Resolve(ctx(t), c, fx.Identity)
	if err != nil || !found || (id != fx.ConfigDigest && id != fx.ManifestDigest) {
		t.Fatalf("after load: %q, %v, %v; want one of %+v", id, found, err, fx.Identity)
	}
	_, os, arch, err := c.ImageInspect(ctx(t), id)
	if err != nil || os != "linux" || arch != "amd64" {
		t.Fatalf("inspect %s: %s/%s, %v", id, os, arch, err)
	}
	t.Logf("engine API %s: loaded image ID %s (config %s, manifest %s)", c.APIVersion(), id, fx.ConfigDigest, fx.ManifestDigest)
}

// TestEngineLoadAttestedArchive loads the archive docker save of the
// containerd image store writes for a buildx-built image with its default
// provenance attestation (an image index listing the linux/amd64 manifest
// and an attestation manifest). Its identity is the image's config digest
// and the index digest. An engine with the classic image store (Docker
// 20.10 here) reads only manifest.json, which names the image alone: it
// loads the image under its config digest, which Resolve finds first. An
// engine with the containerd store identifies it by the index digest.
// Either way the attestation is not an image of the engine.
func TestEngineLoadAttestedArchive(t *testing.T) {
	c, raw := engine(t)
	label := "oac-test-" + uuid.NewString()
	fx, err := imagetest.WriteFixture(t.TempDir(), imagetest.Options{Label: label, Attestation: true})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := imagetest.WriteFixture(t.TempDir(), imagetest.Options{Label: label})
	if err != nil {
		t.Fatal(err)
	}
	if fx.ConfigDigest != plain.ConfigDigest || fx.ManifestDigest == plain.ManifestDigest {
		t.Fatalf("attested archive %+v, plain %+v: want the same config, the index digest", fx.Identity, plain.Identity)
	}
	removeImages(t, raw, fx.ConfigDigest, fx.ManifestDigest, plain.ManifestDigest)

	if err := image.Verify(fx.TarPath, fx.ConfigDigest, fx.ManifestDigest); err != nil {
		t.Fatal(err)
	}
	if _, found, err := image.Resolve(ctx(t), c, fx.Identity); err != nil || found {
		t.Fatalf("before load: found %v, %v", found, err)
	}
	if err := c.ImageLoad(ctx(t), fx.TarPath); err != nil {
		t.Fatalf("the engine (API %s) does not load an archive with an attestation manifest: %v", c.APIVersion(), err)
	}
	id, found, err := image.Resolve(ctx(t), c, fx.Identity)
	if err != nil || !found || (id != fx.ConfigDigest && id != fx.ManifestDigest) {
		t.Fatalf("after load: %q, %v, %v; want one of %+v", id, found, err, fx.Identity)
	}
	_, os, arch, err := c.ImageInspect(ctx(t), id)
	if err != nil || os != "linux" || arch != "amd64" {
		t.Fatalf("inspect %s: %s/%s, %v", id, os, arch, err)
	}
	// The engine lists one image for the label: the attestation manifest
	// (platform unknown/unknown) did not become an image.
	res, err := raw.ImageList(ctx(t), client.ImageListOptions{All: true, Filters: client.Filters{}.Add("label", "io.oac.fixture="+label)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || (res.Items[0].ID != fx.ConfigDigest && res.Items[0].ID != fx.ManifestDigest) {
		t.Fatalf("images with the fixture's label: %+v", res.Items)
	}
	store := "classic (by config digest)"
	if id == fx.ManifestDigest {
		store = "containerd (by index digest)"
	}
	t.Logf("engine API %s, %s store: loaded image ID %s (config %s, index %s)", c.APIVersion(), store, id, fx.ConfigDigest, fx.ManifestDigest)
}

// tamper rewrites the archive at path with one byte of a blob changed:
// the config blob, or else the largest layer blob.
func tamper(t *testing.T, path string, config bool) string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		hdr  *tar.Header
		data []byte
	}
	var es []entry
	tr := tar.NewReader(bytes.NewReader(src))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		es = append(es, entry{hdr, data})
	}
	var legacy []struct{ Config string }
	for _, e := range es {
		if e.hdr.Name == "manifest.json" {
			json.Unmarshal(e.data, &legacy)
		}
	}
	target, size := -1, 0
	for i, e := range es {
		if config && e.hdr.Name == legacy[0].Config {
			target = i
		}
		if !config && e.hdr.Name != legacy[0].Config && filepath.Dir(e.hdr.Name) == "blobs/sha256" && len(e.data) > size {
			target, size = i, len(e.data)
		}
	}
	d := es[target].data
	d[len(d)/2] ^= 1
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for _, e := range es {
		tw.WriteHeader(e.hdr)
		tw.Write(e.data)
	}
	tw.Close()
	p := path + ".tampered"
	writeFile(t, p, out.Bytes())
	return p
}

func TestEngineTamperedArchiveRefusedBeforeImport(t *testing.T) {
	c, raw := engine(t)
	for _, config := range []bool{true, false} {
		t.Run(map[bool]string{true: "config changed", false: "layer changed"}[config], func(t *testing.T) {
			fx, err := imagetest.WriteFixture(t.TempDir(), imagetest.Options{Label: "oac-test-" + uuid.NewString()})
			if err != nil {
				t.Fatal(err)
			}
			removeImages(t, raw, fx.ConfigDigest, fx.ManifestDigest)
			bad := tamper(t, fx.TarPath, config)
			// The installer's order: verify, and load only what verified.
			err = image.Verify(bad, fx.ConfigDigest, fx.ManifestDigest)
			if !errors.Is(err, image.ErrBlobMismatch) {
				t.Fatalf("Verify of a tampered archive: %v", err)
			}
			t.Log(err)
			if _, found, err := image.Resolve(ctx(t), c, fx.Identity); err != nil || found {
				t.Fatalf("the engine holds the image: %v, %v", found, err)
			}
		})
	}
}

func TestEngineNetwork(t *testing.T) {
	c, raw := engine(t)
	installation := uuid.NewString()
	name := docker.NetworkName(ident.InstallationID("test-" + installation))
	t.Cleanup(func() {
		res, err := raw.NetworkList(ctx(t), client.NetworkListOptions{Filters: client.Filters{}.Add("name", name)})
		if err != nil {
			t.Errorf("cleanup: list networks: %v", err)
			return
		}
		for _, n := range res.Items {
			if n.Name == name {
				raw.NetworkRemove(ctx(t), n.ID, client.NetworkRemoveOptions{})
			}
		}
	})
	if _, err := c.NetworkInspect(ctx(t), name); !errors.Is(err, docker.ErrNotFound) {
		t.Fatalf("inspect before create: %v", err)
	}
	id, err := c.NetworkCreate(ctx(t), name, map[string]string{docker.InstallationLabel: installation})
	if err != nil {
		t.Fatal(err)
	}
	n, err := c.NetworkInspect(ctx(t), name)
	if err != nil || n.ID != id || n.Name != name || n.Labels[docker.InstallationLabel] != installation {
		t.Fatalf("inspect: %+v, %v", n, err)
	}
	if _, err := c.NetworkCreate(ctx(t), name, nil); !errors.Is(err, docker.ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	res, err := raw.NetworkList(ctx(t), client.NetworkListOptions{Filters: client.Filters{}.Add("name", name)})
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, n := range res.Items {
		if n.Name == name {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("%d networks named %s after a second create", count, name)
	}
	if err := c.NetworkRemove(ctx(t), name); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NetworkInspect(ctx(t), name); !errors.Is(err, docker.ErrNotFound) {
		t.Fatalf("inspect after remove: %v", err)
	}
	if err := c.NetworkRemove(ctx(t), name); !errors.Is(err, docker.ErrNotFound) {
		t.Fatalf("second remove: %v", err)
	}
}

func TestEngineContainersByLabel(t *testing.T) {
	c, raw := engine(t)
	installation := uuid.NewString()
	fx, err := imagetest.WriteFixture(t.TempDir(), imagetest.Options{Label: "oac-test-" + installation})
	if err != nil {
		t.Fatal(err)
	}
	removeImages(t, raw, fx.ConfigDigest, fx.ManifestDigest)
	if err := c.ImageLoad(ctx(t), fx.TarPath); err != nil {
		t.Fatal(err)
	}
	id, found, err := image.Resolve(ctx(t), c, fx.Identity)
	if err != nil || !found {
		t.Fatalf("resolve: %v, %v", found, err)
	}
	// A created, never started container: the fixture holds no program.
	cr, err := raw.ContainerCreate(ctx(t), client.ContainerCreateOptions{
		Config: &container.Config{Image: id, Cmd: []string{"/oac/fixture"}, Labels: map[string]string{docker.InstallationLabel: installation}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := raw.ContainerRemove(ctx(t), cr.ID, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Errorf("cleanup: remove container: %v", err)
		}
	})
	got, err := c.ContainersByLabel(ctx(t), docker.InstallationLabel, installation)
	if err != nil || len(got) != 1 || got[0].ID != cr.ID || got[0].State != "created" {
		t.Fatalf("got %+v, %v", got, err)
	}
	got, err = c.ContainersByLabel(ctx(t), docker.InstallationLabel, installation+"-other")
	if err != nil || len(got) != 0 {
		t.Fatalf("other installation: %+v, %v", got, err)
	}
}

// TestEngineLoadProvenStream: the machine's engine loads the gunzipped
// stream of the archive while it is proven, read once from the descriptor
// (no unpacked copy). A stream the proof refuses — another archive's
// bytes, or the right bytes under another identity — has all but its last
// MiB handed on, then ends in the refusal: the load fails, and the engine
// holds no image of it.
func TestEngineLoadProvenStream(t *testing.T) {
	c, raw := engine(t)
	opts := func(label string) imagetest.Options {
		return imagetest.Options{Label: label, PayloadSize: 3 << 20}
	}
	fx, err := imagetest.WriteFixture(t.TempDir(), opts("oac-test-"+uuid.NewString()))
	if err != nil {
		t.Fatal(err)
	}
	other, err := imagetest.WriteFixture(t.TempDir(), opts("oac-test-"+uuid.NewString()))
	if err != nil {
		t.Fatal(err)
	}
	removeImages(t, raw, fx.ConfigDigest, fx.ManifestDigest, other.ConfigDigest, other.ManifestDigest)
	a := image.Archive{Size: fx.GzSize, SHA256: fx.GzSHA256, UnpackedSize: fx.TarSize, UnpackedSHA256: fx.TarSHA256, Want: fx.Identity}
	otherID := image.Archive{Size: other.GzSize, SHA256: other.GzSHA256, UnpackedSize: other.TarSize, UnpackedSHA256: other.TarSHA256, Want: fx.Identity}
	load := func(path string, a image.Archive) error {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		lr := image.LoadReader(f, a)
		defer lr.Close()
		return c.ImageLoadReader(ctx(t), lr, path)
	}
	for name, refused := range map[string]struct {
		path string
		a    image.Archive
		want error
	}{
		"another archive's bytes":              {other.GzPath, a, image.ErrArchiveMismatch},
		"its own bytes under another identity": {other.GzPath, otherID, image.ErrIdentityMismatch},
	} {
		if err := load(refused.path, refused.a); !errors.Is(err, refused.want) {
			t.Fatalf("%s: %v, want %v", name, err, refused.want)
		}
		for _, id := range []image.Identity{fx.Identity, other.Identity} {
			if _, found, err := image.Resolve(ctx(t), c, id); err != nil || found {
				t.Fatalf("%s: after the refused stream the engine holds %s: %v, %v", name, id.ConfigDigest, found, err)
			}
		}
	}
	if err := load(fx.GzPath, a); err != nil {
		t.Fatal(err)
	}
	if id, found, err := image.Resolve(ctx(t), c, fx.Identity); err != nil || !found || (id != fx.ConfigDigest && id != fx.ManifestDigest) {
		t.Fatalf("after load: %q, %v, %v", id, found, err)
	}
}
