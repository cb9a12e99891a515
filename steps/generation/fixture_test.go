package generation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/download"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/image"
	"github.com/openagentcore/oac-node-install/steps/layout"
	"github.com/openagentcore/oac-node-install/steps/lease"
	"github.com/openagentcore/oac-node-install/steps/provider"
	"github.com/openagentcore/oac-node-install/steps/release"
)

const (
	testID         = generationtest.InstallationID
	testCredential = generationtest.Credential
	commitA        = generationtest.CommitA
	commitB        = generationtest.CommitB
)

type fixtureRelease = generationtest.Release

func buildRelease(t testing.TB, commit string) *fixtureRelease {
	return generationtest.BuildRelease(t, commit)
}

func newTestServer(t testing.TB, releases ...*fixtureRelease) *generationtest.Server {
	return generationtest.NewServer(t, releases...)
}

func mkdir(t testing.TB, p string) { generationtest.Mkdir(t, p) }

func snapshot(t testing.TB, dir string) map[string]string { return generationtest.Snapshot(t, dir) }

func diffSnapshots(a, b map[string]string) string { return generationtest.Diff(a, b) }

// notFoundError follows the errdefs convention image.Resolve relies on.
type notFoundError struct{ ref string }

func (e notFoundError) Error() string { return "No such image: " + e.ref }
func (notFoundError) NotFound()       {}

// fakeDocker is a Docker Engine whose images live in a JSON file, so that
// it survives the crash harness killing the process. Store "containerd"
// identifies images by manifest digest, anything else by config digest.
type fakeDocker struct {
	path  string
	store string
}

type fakeDockerState struct {
	Images []image.Identity `json:"images"`
	Loads  int              `json:"loads"`
}

func (f *fakeDocker) state() (fakeDockerState, error) {
	var st fakeDockerState
	data, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(data, &st)
}

func (f *fakeDocker) save(st fakeDockerState) error {
	data, _ := json.Marshal(st)
	return safefile.AtomicWrite(f.path, data, 0o600)
}

func (f *fakeDocker) ImageInspect(ctx context.Context, ref string) (string, string, string, error) {
	st, err := f.state()
	if err != nil {
		return "", "", "", err
	}
	for _, im := range st.Images {
		if f.store == "containerd" && ref == im.ManifestDigest {
			return im.ManifestDigest, "linux", "amd64", nil
		}
		if f.store != "containerd" && ref == im.ConfigDigest {
			return im.ConfigDigest, "linux", "amd64", nil
		}
	}
	return "", "", "", notFoundError{ref}
}

func (f *fakeDocker) ImageLoad(ctx context.Context, path string) error {
	id, err := image.Identify(path)
	if err != nil {
		return err
	}
	st, err := f.state()
	if err != nil {
		return err
	}
	st.Loads++
	if !f.holds(st, id) {
		st.Images = append(st.Images, id)
	}
	if err := f.save(st); err != nil {
		return err
	}
	safefile.Failpoint("fake-docker-after-load")
	return nil
}

func (f *fakeDocker) holds(st fakeDockerState, id image.Identity) bool {
	for _, im := range st.Images {
		if im == id {
			return true
		}
	}
	return false
}

// add puts an image in the engine without counting a load.
func (f *fakeDocker) add(t testing.TB, id image.Identity) {
	t.Helper()
	st, err := f.state()
	if err == nil && !f.holds(st, id) {
		st.Images = append(st.Images, id)
		err = f.save(st)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// forget removes an image from the engine (what only an operator does).
func (f *fakeDocker) forget(t testing.TB, id image.Identity) {
	t.Helper()
	st, err := f.state()
	if err != nil {
		t.Fatal(err)
	}
	var keep []image.Identity
	for _, im := range st.Images {
		if im != id {
			keep = append(keep, im)
		}
	}
	st.Images = keep
	if err := f.save(st); err != nil {
		t.Fatal(err)
	}
}

// testNode is a node root as an installation leaves it, with the fake
// engine holding the base image.
type testNode struct {
	home    string
	node    layout.Node
	srv     *generationtest.Server
	docker  *fakeDocker
	baseCfg *provider.Config
	log     *bytes.Buffer
}

func setupNode(t testing.TB, home string, srv *generationtest.Server, providerName string, base *fixtureRelease) *testNode {
	t.Helper()
	gn := generationtest.SetupNode(t, home, srv, providerName, base, "")
	n := &testNode{home: home, node: gn.Layout, srv: srv, baseCfg: gn.Base, log: &bytes.Buffer{},
		docker: &fakeDocker{path: filepath.Join(home, "docker-engine.json")}}
	if providerName == release.ProviderDocker {
		n.docker.add(t, base.Image)
	}
	return n
}

// options are the helper options of a run on this node.
func (n *testNode) options(action string, g int64, spec *release.Specification) Options {
	return Options{
		Action:   action,
		Identity: lease.Identity{InstallationID: testID, Generation: g, SpecificationDigest: spec.Digest()},
		Home:     n.home,
		UID:      os.Getuid(),
		Docker:   func(context.Context, string) (Docker, error) { return n.docker, nil },
		Download: download.Options{RetrySleeps: []time.Duration{time.Millisecond, time.Millisecond}, StallWindow: 5 * time.Second},
		Log:      n.log,
	}
}

// run runs one helper action for generation g with specification spec.
func (n *testNode) run(action string, g int64, spec *release.Specification) error {
	e, err := NewEnv(n.options(action, g, spec))
	if err != nil {
		return err
	}
	defer e.Close()
	_, err = Run(context.Background(), e)
	return err
}

func (n *testNode) path(rel ...string) string {
	return filepath.Join(append([]string{n.node.Root}, rel...)...)
}

func (n *testNode) gen(name string) string { return filepath.Join(n.node.Generations(), name) }
