package noderoot

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
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

// testNode is a node root as an installation leaves it, with the fake
// engine holding the base image.
type testNode struct {
	home   string
	node   layout.Node
	srv    *generationtest.Server
	docker *dockertest.FileEngine
}

// dockerNode is a Docker node on release A with release B published too.
func dockerNode(t *testing.T) (*testNode, *fixtureRelease, *fixtureRelease) {
	t.Helper()
	a, b := buildRelease(t, commitA), buildRelease(t, commitB)
	srv := generationtest.NewServer(t, a, b)
	home := t.TempDir()
	gn := generationtest.SetupNode(t, home, srv, release.ProviderDocker, a, "")
	n := &testNode{home: home, node: gn.Layout, srv: srv, docker: &dockertest.FileEngine{Path: filepath.Join(home, "docker-engine.json")}}
	if err := n.docker.AddImage(a.Image); err != nil {
		t.Fatal(err)
	}
	return n, a, b
}

// options are the options of a run on this node.
func (n *testNode) options(action string, g int64, spec *release.Specification) Options {
	return Options{
		Action:   action,
		Identity: lease.Identity{InstallationID: testID, Generation: g, SpecificationDigest: spec.Digest()},
		Home:     n.home,
		UID:      os.Getuid(),
		Docker:   func(context.Context, string) (Docker, error) { return n.docker, nil },
		Download: download.Options{RetrySleeps: []time.Duration{time.Millisecond, time.Millisecond}, StallWindow: 5 * time.Second},
		Log:      io.Discard,
	}
}

func (n *testNode) path(rel ...string) string {
	return filepath.Join(append([]string{n.node.Root}, rel...)...)
}
