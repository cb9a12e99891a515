package generation

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/microsandbox"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
)

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

func readCollecting(t *testing.T, n *testNode, g int64) lease.Collecting {
	t.Helper()
	c, err := lease.ReadCollecting(n.node.Generations(), g, os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCollectDocker(t *testing.T) {
	t.Parallel()
	n, b, spec := preparedNode(t)
	if err := n.run(noderoot.ActionCollect, 2, spec); err != nil {
		t.Fatalf("collect: %v\n%s", err, n.log)
	}
	if got := listDir(t, n.path("releases", commitB)); len(got) != 2 || got[0] != release.SumsName || got[1] != release.ManifestName {
		t.Errorf("releases/%s holds %v, want only the release copies", commitB, got)
	}
	if c := readCollecting(t, n, 2); !c.NativeComplete {
		t.Error("native_complete is false")
	}
	if _, err := lease.ReadDropped(n.node.Generations(), 2, os.Getuid()); err != nil {
		t.Errorf("no dropped marker: %v", err)
	}
	for _, name := range []string{"2.json", "2.lease", "2.lease-identity"} {
		if _, err := os.Stat(n.gen(name)); err != nil {
			t.Errorf("%s is not kept as a receipt: %v", name, err)
		}
	}
	if _, found, _ := resolveFake(n, b); !found {
		t.Error("a Docker image was removed")
	}
	if err := n.run(noderoot.ActionCollect, 2, spec); err != nil {
		t.Errorf("collecting again: %v", err)
	}
	err := n.run(noderoot.ActionPrepare, 2, spec)
	if !errors.Is(err, lease.ErrDropped) {
		t.Errorf("preparing a dropped generation: %v", err)
	}
	reports, _ := lease.Inspect(n.node.Generations(), os.Getuid())
	if r := reports[1]; !r.Records.Dropped || !r.Records.Collecting || !r.Records.NativeComplete || r.Lease.State != lease.StateOK {
		t.Errorf("leases reports %+v", r)
	}
}

func TestCollectKeepsFilesAnotherGenerationUses(t *testing.T) {
	t.Parallel()
	n, b, spec := preparedNode(t)
	spec4 := b.Spec(t, release.ProviderDocker, 3)
	n.srv.SetSpec(4, spec4)
	if err := n.run(noderoot.ActionPrepare, 4, spec4); err != nil {
		t.Fatal(err)
	}
	before := treetest.Snapshot(t, n.path("releases"), treetest.Options{})
	if err := n.run(noderoot.ActionCollect, 2, spec); err != nil {
		t.Fatalf("collect 2: %v", err)
	}
	if d := treetest.Diff(before, treetest.Snapshot(t, n.path("releases"), treetest.Options{})); d != "" {
		t.Errorf("files generation 4 uses were removed:\n%s", d)
	}
	if err := n.run(noderoot.ActionCollect, 4, spec4); err != nil {
		t.Fatalf("collect 4: %v", err)
	}
	if got := listDir(t, n.path("releases", commitB)); len(got) != 2 {
		t.Errorf("after the last reference: %v", got)
	}
}

func TestCollectBaseGeneration(t *testing.T) {
	t.Parallel()
	t.Run("root files stay while another generation uses them", func(t *testing.T) {
		t.Parallel()
		n, a, _ := dockerNode(t)
		spec3 := a.Spec(t, release.ProviderDocker, 4)
		n.srv.SetSpec(3, spec3)
		if err := n.run(noderoot.ActionPrepare, 3, spec3); err != nil {
			t.Fatal(err)
		}
		if err := n.run(noderoot.ActionCollect, 1, n.baseCfg.Specification); err != nil {
			t.Fatalf("collect 1: %v\n%s", err, n.log)
		}
		if _, err := os.Stat(n.path(release.PathSeccomp)); err != nil {
			t.Errorf("the root's seccomp profile generation 3 uses was removed: %v", err)
		}
	})
	t.Run("root Runtime files proven by runtime-artifacts.json go", func(t *testing.T) {
		t.Parallel()
		n, _, _ := dockerNode(t)
		if err := n.run(noderoot.ActionCollect, 1, n.baseCfg.Specification); err != nil {
			t.Fatalf("collect 1: %v\n%s", err, n.log)
		}
		if _, err := os.Stat(n.path(release.PathSeccomp)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the root's seccomp profile stays: %v", err)
		}
		for _, keep := range []string{"provider.json", release.PathNode, "runtime-artifacts.json", "state/node/identity.json", "preparation.json", "generation-preparer.pyz"} {
			if _, err := os.Stat(n.path(keep)); err != nil {
				t.Errorf("%s was removed: %v", keep, err)
			}
		}
	})
}

func TestCollectRefusals(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) (int64, *release.Specification)
		want  error
	}{
		{"changed bytes", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) (int64, *release.Specification) {
			os.WriteFile(n.path("releases", commitB, release.PathRuntimeImage), []byte("other"), 0o600)
			return 2, spec
		}, noderoot.ErrUnprovenFile},
		{"a link", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) (int64, *release.Specification) {
			p := n.path("releases", commitB, release.PathSeccomp)
			os.Remove(p)
			os.Symlink(n.path("provider.json"), p)
			return 2, spec
		}, noderoot.ErrUnprovenFile},
		{"a hard link", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) (int64, *release.Specification) {
			os.Link(n.path("releases", commitB, release.PathSeccomp), n.path("seccomp-copy"))
			return 2, spec
		}, noderoot.ErrUnprovenFile},
		{"unknown hash: no release copies", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) (int64, *release.Specification) {
			os.Remove(n.path("releases", commitB, release.ManifestName))
			return 2, spec
		}, noderoot.ErrUnprovenFile},
		{"unknown hash: root files without runtime-artifacts.json", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) (int64, *release.Specification) {
			os.Remove(n.path("runtime-artifacts.json"))
			return 1, n.baseCfg.Specification
		}, noderoot.ErrUnprovenFile},
		{"an unreadable retained configuration", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) (int64, *release.Specification) {
			os.WriteFile(n.gen("5.json"), []byte("{"), 0o600)
			return 2, spec
		}, noderoot.ErrReferenced},
		{"another specification", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) (int64, *release.Specification) {
			return 2, b.Spec(t, release.ProviderDocker, 8)
		}, lease.ErrIdentityMismatch},
		{"no lease", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) (int64, *release.Specification) {
			return 6, spec
		}, lease.ErrLeaseMissing},
		{"helper holds the lease", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) (int64, *release.Specification) {
			l, err := safefile.TryLockShared(n.gen("2.lease"), 0o600)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Unlock() })
			return 2, spec
		}, lease.ErrHelperActive},
		{"installation lock busy", func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) (int64, *release.Specification) {
			l, err := safefile.TryLock(n.node.InstallLock(), 0o600)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Unlock() })
			return 2, spec
		}, noderoot.ErrInstallLocked},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, b, spec := preparedNode(t)
			g, s := tc.setup(t, n, b, spec)
			var err error
			unchanged(t, n, func() { err = n.run(noderoot.ActionCollect, g, s) })
			if !errors.Is(err, tc.want) {
				t.Fatalf("collect: %v, want %v", err, tc.want)
			}
			if _, err := os.Lstat(n.gen("2.collecting")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a collection journal was written before the refusal: %v", err)
			}
		})
	}
}

// microNode is a microsandbox node on release A (its store under a home
// short enough for microsandbox) with release B published; generation 2
// runs B, whose firmware differs, so it gets its own store.
func microNode(t *testing.T) (*testNode, *fixtureRelease, *release.Specification) {
	t.Helper()
	home, err := os.MkdirTemp("/tmp", "g")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	a, b := buildRelease(t, commitA), buildRelease(t, commitB)
	n := setupNode(t, home, newTestServer(t, a, b), release.ProviderMicrosandbox, a)
	spec := b.Spec(t, release.ProviderMicrosandbox, 2)
	n.srv.SetSpec(2, spec)
	return n, b, spec
}

func (n *testNode) storeImage(t *testing.T, c *provider.Config) string {
	return filepath.Join(c.Microsandbox.RuntimeHome, ".fake", c.Microsandbox.Image)
}

func TestMicrosandboxPrepareAndCollect(t *testing.T) {
	t.Parallel()
	n, b, spec := microNode(t)
	if err := n.run(noderoot.ActionPrepare, 2, spec); err != nil {
		t.Fatalf("prepare: %v\n%s", err, n.log)
	}
	final := readConfig(t, n.gen("2.json"))
	want, _ := provider.GenerationStorePath(n.home, testID, spec.Runtime.RuntimeSHA256, spec.Runtime.FirmwareSHA256)
	if final.Microsandbox.RuntimeHome != want || final.Microsandbox.Image != b.Manifest.RuntimeRef {
		t.Fatalf("final %+v", final.Microsandbox)
	}
	if _, err := os.Stat(n.storeImage(t, final)); err != nil {
		t.Fatalf("the image is not in the generation's store: %v", err)
	}
	if err := microsandbox.CheckStoreOwner(want, testID, os.Getuid()); err != nil {
		t.Errorf("store ownership: %v", err)
	}
	if err := n.run(noderoot.ActionCollect, 2, spec); err != nil {
		t.Fatalf("collect: %v\n%s", err, n.log)
	}
	if _, err := os.Stat(n.storeImage(t, final)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the generation's image stays in its store: %v", err)
	}
	if _, err := os.Stat(n.storeImage(t, n.baseCfg)); err != nil {
		t.Errorf("the base generation's image was removed: %v", err)
	}
	if got := listDir(t, n.path("releases", commitB)); len(got) != 2 {
		t.Errorf("releases/%s holds %v", commitB, got)
	}
}

func TestMicrosandboxInventoryFailureKeepsEveryByte(t *testing.T) {
	t.Parallel()
	for _, fail := range []string{"fail-list", "fail-sandboxes", "sandboxes", "fail-remove"} {
		t.Run(fail, func(t *testing.T) {
			t.Parallel()
			n, _, spec := microNode(t)
			if err := n.run(noderoot.ActionPrepare, 2, spec); err != nil {
				t.Fatalf("prepare: %v\n%s", err, n.log)
			}
			final := readConfig(t, n.gen("2.json"))
			content := ""
			if fail == "sandboxes" {
				content = `[{"name":"busy"}]`
			}
			os.WriteFile(filepath.Join(final.Microsandbox.RuntimeHome, ".fake", fail), []byte(content), 0o600)
			releases := treetest.Snapshot(t, n.path("releases"), treetest.Options{})
			store := treetest.Snapshot(t, final.Microsandbox.RuntimeHome, treetest.Options{})
			err := n.run(noderoot.ActionCollect, 2, spec)
			if !errors.Is(err, ErrNativeKept) {
				t.Fatalf("collect: %v, want ErrNativeKept", err)
			}
			if c := readCollecting(t, n, 2); c.NativeComplete {
				t.Error("native_complete is true after a failed inventory")
			}
			if d := treetest.Diff(releases, treetest.Snapshot(t, n.path("releases"), treetest.Options{})); d != "" {
				t.Errorf("release files changed:\n%s", d)
			}
			if d := treetest.Diff(store, treetest.Snapshot(t, final.Microsandbox.RuntimeHome, treetest.Options{})); d != "" {
				t.Errorf("the store changed:\n%s", d)
			}
			if _, err := os.Lstat(n.gen("2.dropped")); !errors.Is(err, os.ErrNotExist) {
				t.Error("dropped after a failed inventory")
			}
			// Once msb answers, the same command finishes the collection.
			os.Remove(filepath.Join(final.Microsandbox.RuntimeHome, ".fake", fail))
			if err := n.run(noderoot.ActionCollect, 2, spec); err != nil {
				t.Fatalf("collect after the failure cleared: %v\n%s", err, n.log)
			}
			if _, err := os.Stat(n.storeImage(t, final)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the image stays: %v", err)
			}
		})
	}
}

func TestMicrosandboxCollectNeverImportedSkipsNative(t *testing.T) {
	t.Parallel()
	n, _, spec := microNode(t)
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
	plan := readPlanConfig(t, n, 2)
	// msb would fail every query: collection must not need it.
	os.MkdirAll(filepath.Join(plan.Microsandbox.RuntimeHome, ".fake"), 0o700)
	os.WriteFile(filepath.Join(plan.Microsandbox.RuntimeHome, ".fake", "fail-list"), nil, 0o600)
	if err := n.run(noderoot.ActionCollect, 2, spec); err != nil {
		t.Fatalf("collect: %v\n%s", err, n.log)
	}
	if !readCollecting(t, n, 2).NativeComplete {
		t.Error("native_complete is false")
	}
}

func TestMicrosandboxCollectMissingRuntimeStaysRetained(t *testing.T) {
	t.Parallel()
	n, _, spec := microNode(t)
	if err := n.run(noderoot.ActionPrepare, 2, spec); err != nil {
		t.Fatal(err)
	}
	os.Remove(n.path("releases", commitB, release.PathMicroRuntime))
	err := n.run(noderoot.ActionCollect, 2, spec)
	if !errors.Is(err, ErrNativeKept) {
		t.Fatalf("collect without msb: %v", err)
	}
	if readCollecting(t, n, 2).NativeComplete {
		t.Error("native_complete is true although the image could not be inventoried")
	}
}

func readPlanConfig(t *testing.T, n *testNode, g int64) *provider.Config {
	t.Helper()
	p, err := lease.ReadPreparing(n.node.Generations(), g, os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	c, err := provider.Parse(p.Configuration)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
