package generation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// The final configuration <g>.json is write-once: a publish step that finds
// other bytes there (written after the plan was checked) refuses and leaves
// them as they are. An overwriting write would pass every other test.
func TestPublishNeverOverwritesFinalConfiguration(t *testing.T) {
	base := buildRelease(t, commitA)
	next := buildRelease(t, commitB)
	srv := newTestServer(t, base, next)
	n := setupNode(t, filepath.Join(t.TempDir(), "home"), srv, release.ProviderDocker, base)
	spec := next.Spec(t, release.ProviderDocker, 2)
	srv.SetSpec(2, spec)
	plan, err := provider.Plan(n.baseCfg, spec, 2, n.node.Root, n.home)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := plan.Marshal()
	initLease(t, n, 2, spec)
	if err := lease.WritePreparing(n.node.Generations(), lease.Preparing{Identity: leaseID(2, spec), ImportStarted: true, Configuration: data}, os.Getuid()); err != nil {
		t.Fatal(err)
	}
	other := plan.Clone()
	other.Docker.Image = spec.Runtime.ImageManifestDigest
	otherData, _ := other.Marshal()
	if err := os.WriteFile(n.gen("2.json"), otherData, 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := noderoot.NewEnv(n.options(noderoot.ActionPrepare, 2, spec))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, err = publishStep{e}.Run(context.Background(), workflow.Facts{factImage: spec.Runtime.ImageID})
	if !errors.Is(err, ErrPlanDrift) || !workflow.IsUnchanged(err) {
		t.Fatalf("publish over other bytes: %v", err)
	}
	if got, _ := os.ReadFile(n.gen("2.json")); !bytes.Equal(got, otherData) {
		t.Fatalf("the final configuration was overwritten:\n%s", got)
	}
}

// The platform's helper writes <g>.json on one line: a publish step that
// finds the same configuration in that layout is satisfied and leaves its
// bytes as they are.
func TestPublishAcceptsTheSameConfigurationInAnotherLayout(t *testing.T) {
	base := buildRelease(t, commitA)
	next := buildRelease(t, commitB)
	srv := newTestServer(t, base, next)
	n := setupNode(t, filepath.Join(t.TempDir(), "home"), srv, release.ProviderDocker, base)
	spec := next.Spec(t, release.ProviderDocker, 2)
	srv.SetSpec(2, spec)
	plan, err := provider.Plan(n.baseCfg, spec, 2, n.node.Root, n.home)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := plan.Marshal()
	initLease(t, n, 2, spec)
	if err := lease.WritePreparing(n.node.Generations(), lease.Preparing{Identity: leaseID(2, spec), ImportStarted: true, Configuration: data}, os.Getuid()); err != nil {
		t.Fatal(err)
	}
	final := plan.Clone()
	final.Docker.Image = spec.Runtime.ImageID
	finalData, _ := final.Marshal()
	var oneLine bytes.Buffer
	if err := json.Compact(&oneLine, finalData); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(oneLine.Bytes(), finalData) {
		t.Fatal("the configuration is already on one line")
	}
	if err := os.WriteFile(n.gen("2.json"), oneLine.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := noderoot.NewEnv(n.options(noderoot.ActionPrepare, 2, spec))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := (publishStep{e}).Run(context.Background(), workflow.Facts{factImage: spec.Runtime.ImageID}); err != nil {
		t.Fatalf("publish over the same configuration on one line: %v", err)
	}
	if got, _ := os.ReadFile(n.gen("2.json")); !bytes.Equal(got, oneLine.Bytes()) {
		t.Fatalf("the final configuration was rewritten:\n%s", got)
	}
}
