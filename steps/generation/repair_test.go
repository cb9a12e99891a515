package generation

import (
	"errors"
	"os"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
)

// preparedNode is a Docker node with generation 2 prepared on release B.
func preparedNode(t *testing.T) (*testNode, *fixtureRelease, *release.Specification) {
	t.Helper()
	n, _, b := dockerNode(t)
	spec := b.Spec(t, release.ProviderDocker, 2)
	n.srv.SetSpec(2, spec)
	if err := n.run(noderoot.ActionPrepare, 2, spec); err != nil {
		t.Fatalf("prepare: %v\n%s", err, n.log)
	}
	return n, b, spec
}

func TestRepairRestoresMissingFilesAndTheImage(t *testing.T) {
	t.Parallel()
	n, b, spec := preparedNode(t)
	want := treetest.Snapshot(t, n.path("releases"), treetest.Options{})
	for _, rel := range []string{release.PathSeccomp, release.PathRuntimeImage} {
		if err := os.Remove(n.path("releases", commitB, rel)); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.docker.RemoveImage(b.Image); err != nil {
		t.Fatal(err)
	}
	if err := n.run(noderoot.ActionRepair, 2, spec); err != nil {
		t.Fatalf("repair: %v\n%s", err, n.log)
	}
	if d := treetest.Diff(want, treetest.Snapshot(t, n.path("releases"), treetest.Options{})); d != "" {
		t.Errorf("repair did not restore the release files as they were:\n%s", d)
	}
	if _, found, _ := resolveFake(n, b); !found {
		t.Error("the image was not imported again")
	}
	// Repair runs again later: a new journal, the completed one kept.
	if err := os.Remove(n.path("releases", commitB, release.PathSeccomp)); err != nil {
		t.Fatal(err)
	}
	if err := n.run(noderoot.ActionRepair, 2, spec); err != nil {
		t.Fatalf("second repair: %v", err)
	}
	if _, err := os.Stat(n.path("releases", commitB, release.PathSeccomp)); err != nil {
		t.Errorf("second repair: %v", err)
	}
	if _, err := os.Stat(n.node.GenerationJournal("repair", 2) + ".1"); err != nil {
		t.Errorf("the first repair journal was not kept: %v", err)
	}
}

func resolveFake(n *testNode, r *fixtureRelease) (string, bool, error) {
	id, _, _, err := n.docker.ImageInspect(nil, r.Image.ConfigDigest)
	if err != nil {
		return "", false, nil
	}
	return id, true, nil
}

func TestRepairOfThePlanOnly(t *testing.T) {
	t.Parallel()
	n, _, b := dockerNode(t)
	spec := b.Spec(t, release.ProviderDocker, 2)
	n.srv.SetSpec(2, spec)
	// An interrupted preparation: the plan, some files, no final configuration.
	e, err := noderoot.NewEnv(n.options(noderoot.ActionPrepare, 2, spec))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Acquire(); err != nil {
		t.Fatal(err)
	}
	for _, st := range []workflow.State{workflow.PrepareLease, workflow.PreparePlan, workflow.PrepareDownload} {
		if _, err := PrepareSteps(e)[st].Run(t.Context(), nil); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
	e.Close()
	os.Remove(n.path("releases", commitB, release.PathSeccomp))
	if err := n.run(noderoot.ActionRepair, 2, spec); err != nil {
		t.Fatalf("repair with an exact plan: %v\n%s", err, n.log)
	}
	if _, err := os.Stat(n.path("releases", commitB, release.PathSeccomp)); err != nil {
		t.Errorf("the exact plan's file was not restored: %v", err)
	}
}

func TestRepairRefusals(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) *release.Specification
		want  error
	}{
		{"missing configuration without a plan", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) *release.Specification {
			os.Remove(n.gen("2.json"))
			return spec
		}, ErrNoConfiguration},
		{"a plan that is not exact", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) *release.Specification {
			data, _ := os.ReadFile(n.gen("2.json"))
			os.Remove(n.gen("2.json"))
			c, err := provider.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			c.Docker.SeccompFile = "/elsewhere/runtime/seccomp.json"
			d, _ := c.Marshal()
			if err := lease.WritePreparing(n.node.Generations(), lease.Preparing{Identity: leaseID(2, spec), Configuration: d}, os.Getuid()); err != nil {
				t.Fatal(err)
			}
			return spec
		}, provider.ErrPlanMismatch},
		{"different retained specification", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) *release.Specification {
			// The lease and journal are the run's; the configuration holds another specification.
			other := b.Spec(t, release.ProviderDocker, 5)
			c := readConfig(t, n.gen("2.json"))
			c.Specification = other
			d, _ := c.Marshal()
			os.WriteFile(n.gen("2.json"), d, 0o600)
			return spec
		}, noderoot.ErrSpecification},
		{"conflicting bytes", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) *release.Specification {
			os.WriteFile(n.path("releases", commitB, release.PathSeccomp), []byte("{}\n"), 0o600)
			return spec
		}, noderoot.ErrConflict},
		{"conflicting release copy", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) *release.Specification {
			os.WriteFile(n.path("releases", commitB, release.ManifestName), []byte("{}\n"), 0o600)
			return spec
		}, noderoot.ErrConflict},
		{"a link among the files", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) *release.Specification {
			p := n.path("releases", commitB, release.PathSeccomp)
			os.Remove(p)
			os.Symlink("/etc/hostname", p)
			return spec
		}, noderoot.ErrConflict},
		{"collecting generation", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) *release.Specification {
			writeRecord(t, n.gen("2.collecting"), map[string]any{"installation_id": testID, "generation": 2, "specification_digest": spec.Digest(), "native_complete": false})
			return spec
		}, noderoot.ErrCollecting},
		{"dropped generation", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) *release.Specification {
			writeRecord(t, n.gen("2.dropped"), map[string]any{"installation_id": testID, "generation": 2, "specification_digest": spec.Digest()})
			return spec
		}, lease.ErrDropped},
		{"no lease", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) *release.Specification {
			other := b.Spec(t, release.ProviderDocker, 6)
			return other // generation 9 below has no lease
		}, lease.ErrLeaseMissing},
		{"helper holds the lease", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) *release.Specification {
			l, err := safefile.TryLockShared(n.gen("2.lease"), 0o600)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Unlock() })
			return spec
		}, lease.ErrHelperActive},
		{"installation lock busy", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) *release.Specification {
			l, err := safefile.TryLock(n.node.InstallLock(), 0o600)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Unlock() })
			return spec
		}, noderoot.ErrInstallLocked},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, b, spec := preparedNode(t)
			s := tc.setup(t, n, b, spec)
			g := int64(2)
			if tc.name == "no lease" {
				g = 9
			}
			var err error
			unchanged(t, n, func() { err = n.run(noderoot.ActionRepair, g, s) })
			if !errors.Is(err, tc.want) {
				t.Fatalf("repair: %v, want %v", err, tc.want)
			}
			if noderoot.IsArtifactFailure(err) {
				t.Errorf("a local refusal is classified as an artifact failure: %v", err)
			}
		})
	}
}
