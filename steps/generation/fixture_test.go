package generation

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
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

// testNode is a node root as an installation leaves it, with the fake
// engine holding the base image.
type testNode struct {
	home    string
	node    layout.Node
	srv     *generationtest.Server
	docker  *dockertest.FileEngine
	baseCfg *provider.Config
	log     *bytes.Buffer
}

func setupNode(t testing.TB, home string, srv *generationtest.Server, providerName string, base *fixtureRelease) *testNode {
	t.Helper()
	gn := generationtest.SetupNode(t, home, srv, providerName, base, "")
	n := &testNode{home: home, node: gn.Layout, srv: srv, baseCfg: gn.Base, log: &bytes.Buffer{},
		docker: &dockertest.FileEngine{Path: filepath.Join(home, "docker-engine.json")}}
	if providerName == release.ProviderDocker {
		if err := n.docker.AddImage(base.Image); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// options are the helper options of a run on this node.
func (n *testNode) options(action string, g int64, spec *release.Specification) noderoot.Options {
	return noderoot.Options{
		Action:   action,
		Identity: lease.Identity{InstallationID: testID, Generation: g, SpecificationDigest: spec.Digest()},
		Home:     n.home,
		UID:      os.Getuid(),
		Docker:   func(context.Context, string) (noderoot.Docker, error) { return n.docker, nil },
		Download: download.Options{RetrySleeps: []time.Duration{time.Millisecond, time.Millisecond}, StallWindow: 5 * time.Second},
		Log:      n.log,
	}
}

// run runs one helper action for generation g with specification spec.
func (n *testNode) run(action string, g int64, spec *release.Specification) error {
	e, err := noderoot.NewEnv(n.options(action, g, spec))
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
