package generation

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// TestWithTheDockerEngine prepares, repairs and collects a generation with
// the machine's Docker Engine: the fixture Runtime image is loaded once,
// resolved to its local ID, probed by repair, and never removed by
// collection (the test removes it).
func TestWithTheDockerEngine(t *testing.T) {
	c := generationtest.BuildUniqueRelease(t)
	dk := generationtest.MachineEngine(t, c)
	cx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := buildRelease(t, commitA)
	srv := newTestServer(t, a, c)
	n := setupNode(t, t.TempDir(), srv, release.ProviderDocker, a)
	spec := c.Spec(t, release.ProviderDocker, 2)
	srv.SetSpec(2, spec)
	run := func(action string) error {
		opts := n.options(action, 2, spec)
		opts.Docker = func(context.Context, string) (noderoot.Docker, error) { return dk, nil }
		e, err := noderoot.NewEnv(opts)
		if err != nil {
			return err
		}
		defer e.Close()
		_, err = Run(cx, e)
		return err
	}
	if err := run(noderoot.ActionPrepare); err != nil {
		t.Fatalf("prepare: %v\n%s", err, n.log)
	}
	final := readConfig(t, n.gen("2.json"))
	if id := final.Docker.Image; id != c.Image.ConfigDigest && id != c.Image.ManifestDigest {
		t.Fatalf("final image %s is neither identity of %+v", id, c.Image)
	}
	if _, goos, arch, err := dk.ImageInspect(cx, final.Docker.Image); err != nil || goos != "linux" || arch != "amd64" {
		t.Fatalf("the engine does not hold %s: %s/%s %v", final.Docker.Image, goos, arch, err)
	}
	if err := run(noderoot.ActionRepair); err != nil {
		t.Fatalf("repair: %v\n%s", err, n.log)
	}
	if err := run(noderoot.ActionCollect); err != nil {
		t.Fatalf("collect: %v\n%s", err, n.log)
	}
	if _, _, _, err := dk.ImageInspect(cx, final.Docker.Image); err != nil {
		t.Errorf("collection removed the Docker image: %v", err)
	}
	if _, err := lease.ReadDropped(n.node.Generations(), 2, os.Getuid()); err != nil {
		t.Errorf("no dropped marker: %v", err)
	}
}
