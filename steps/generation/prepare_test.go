package generation

import (
	"errors"
	"os"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
)

// dockerNode is a Docker node on release A with release B published too.
func dockerNode(t *testing.T) (*testNode, *fixtureRelease, *fixtureRelease) {
	t.Helper()
	a, b := buildRelease(t, commitA), buildRelease(t, commitB)
	srv := newTestServer(t, a, b)
	return setupNode(t, t.TempDir(), srv, release.ProviderDocker, a), a, b
}

func readConfig(t *testing.T, path string) *provider.Config {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := provider.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPrepareDockerOtherRelease(t *testing.T) {
	n, _, b := dockerNode(t)
	spec := b.Spec(t, release.ProviderDocker, 2)
	n.srv.SetSpec(2, spec)
	if err := n.run(noderoot.ActionPrepare, 2, spec); err != nil {
		t.Fatalf("prepare: %v\n%s", err, n.log)
	}
	final := readConfig(t, n.gen("2.json"))
	if final.Docker.Image != b.Image.ConfigDigest {
		t.Errorf("final image %s, want the resolved config digest %s", final.Docker.Image, b.Image.ConfigDigest)
	}
	if want := n.path("releases", commitB, release.PathSeccomp); final.Docker.SeccompFile != want {
		t.Errorf("seccomp %s, want %s", final.Docker.SeccompFile, want)
	}
	if _, err := os.Lstat(n.gen("2.preparing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the plan was not cleared: %v", err)
	}
	for rel, want := range map[string][]byte{
		release.ManifestName:     b.Files[release.ManifestName],
		release.SumsName:         b.Files[release.SumsName],
		release.PathSeccomp:      b.Bytes[release.PathSeccomp],
		release.PathRuntimeImage: b.Bytes[release.PathRuntimeImage],
	} {
		got, err := os.ReadFile(n.path("releases", commitB, rel))
		if err != nil || string(got) != string(want) {
			t.Errorf("releases/%s/%s: %v (%d bytes, want %d)", commitB, rel, err, len(got), len(want))
		}
	}
	if _, err := os.Lstat(n.path("releases", commitB, noderoot.PathUnpacked)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the unpacked archive stays after the import: %v", err)
	}
	st, _ := n.docker.State()
	if st.Loads != 1 {
		t.Errorf("%d image loads, want 1", st.Loads)
	}
	reports, err := lease.Inspect(n.node.Generations(), os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 2 || reports[1].Lease.State != lease.StateOK || !reports[1].Records.Prepared || reports[1].Records.Preparing {
		t.Errorf("leases: %+v", reports)
	}
	rep, err := workflow.InspectJournal(n.node.GenerationJournal("prepare", 2), workflow.Lookup)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("journal: %+v, %v", rep, err)
	}

	// A rerun changes nothing and asks nobody.
	before := treetest.Snapshot(t, n.home, treetest.Options{})
	requests := n.srv.Count("/node-install/releases/" + commitB + "/manifest.json")
	if err := n.run(noderoot.ActionPrepare, 2, spec); err != nil {
		t.Fatalf("rerun: %v", err)
	}
	if d := treetest.Diff(before, treetest.Snapshot(t, n.home, treetest.Options{})); d != "" {
		t.Errorf("the rerun changed files:\n%s", d)
	}
	if got := n.srv.Count("/node-install/releases/" + commitB + "/manifest.json"); got != requests {
		t.Errorf("the rerun fetched metadata again")
	}
}

func TestPrepareDockerContainerdStoreRecordsManifestDigest(t *testing.T) {
	n, _, b := dockerNode(t)
	n.docker.ContainerdStore = true
	spec := b.Spec(t, release.ProviderDocker, 2)
	n.srv.SetSpec(2, spec)
	if err := n.run(noderoot.ActionPrepare, 2, spec); err != nil {
		t.Fatalf("prepare: %v\n%s", err, n.log)
	}
	if got := readConfig(t, n.gen("2.json")).Docker.Image; got != b.Image.ManifestDigest {
		t.Errorf("final image %s, want the manifest digest %s", got, b.Image.ManifestDigest)
	}
}

func TestPrepareSameReleaseReusesTheRootAndTheImage(t *testing.T) {
	n, a, _ := dockerNode(t)
	spec := a.Spec(t, release.ProviderDocker, 4)
	n.srv.SetSpec(3, spec)
	if err := n.run(noderoot.ActionPrepare, 3, spec); err != nil {
		t.Fatalf("prepare: %v\n%s", err, n.log)
	}
	final := readConfig(t, n.gen("3.json"))
	if final.Docker.SeccompFile != n.baseCfg.Docker.SeccompFile || final.Docker.Image != a.Image.ConfigDigest {
		t.Errorf("final %+v", final.Docker)
	}
	if got := n.srv.Count("/node-install/releases/" + commitA + "/artifacts/" + a.Manifest.Artifacts[release.PathRuntimeImage].Filename); got != 0 {
		t.Errorf("the image archive was downloaded %d times although the engine holds the image", got)
	}
	if _, err := os.Lstat(n.path("releases")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a releases directory was made for the root's own release")
	}
	if st, _ := n.docker.State(); st.Loads != 0 {
		t.Errorf("%d loads, want 0", st.Loads)
	}
}

func TestPrepareBaseGenerationIsAlreadyPrepared(t *testing.T) {
	n, a, _ := dockerNode(t)
	if err := n.run(noderoot.ActionPrepare, 1, a.Spec(t, release.ProviderDocker, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(n.node.GenerationJournal("prepare", 1)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("preparing the base generation ran a workflow: %v", err)
	}
	err := n.run(noderoot.ActionPrepare, 1, a.Spec(t, release.ProviderDocker, 3))
	if !errors.Is(err, lease.ErrIdentityMismatch) {
		t.Fatalf("base generation with another specification: %v", err)
	}
}
