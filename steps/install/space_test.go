package install

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/record/console"
	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
)

// fakeSpace makes statfs report avail bytes available on every file
// system, and records the directories asked,
// until the test ends.
func fakeSpace(t *testing.T, avail int64) *[]string {
	t.Helper()
	var asked []string
	old := statfs
	statfs = func(path string, st *unix.Statfs_t) error {
		asked = append(asked, path)
		*st = unix.Statfs_t{Bsize: 1, Frsize: 1, Bavail: uint64(avail), Bfree: uint64(avail)}
		return nil
	}
	t.Cleanup(func() { statfs = old })
	return &asked
}

// spaceNeed is what a new node's files take for provider: the current
// release's node program, the selected release's other artifacts, and
// for microsandbox the unpacked archive (without the archive when warm).
func spaceNeed(cur, sel *generationtest.Release, providerName string, warm bool) int64 {
	n := cur.Manifest.Artifacts[release.PathNode].Size
	for _, a := range release.Catalog(providerName) {
		if a.Role == release.RolePolicy || a.Path == release.PathNode {
			continue
		}
		if a.Path == release.PathRuntimeImage {
			if warm {
				continue
			}
			if providerName == release.ProviderMicrosandbox { // msb loads an unpacked copy
				n += sel.Manifest.Artifacts[a.Path].UnpackedSize
			}
		}
		n += sel.Manifest.Artifacts[a.Path].Size
	}
	return n
}

// heldImage is a Docker Engine holding one image.
type heldImage struct{ id image.Identity }

func (h heldImage) ImageInspect(_ context.Context, ref string) (string, string, string, error) {
	if ref == h.id.ConfigDigest || ref == h.id.ManifestDigest {
		return h.id.ConfigDigest, "linux", "amd64", nil
	}
	return "", "", "", dockertest.ImageNotFound{Ref: ref}
}

// The space check against a console (current release A, Core selecting
// B's Runtime) and a bundle of the same: the node's files and the
// unpacked archive must fit; a warm Docker image needs no archive; a
// known node, an interrupted first run and an unreadable console skip it.
func TestSpaceCheck(t *testing.T) {
	cur := generationtest.BuildRelease(t, generationtest.CommitA)
	sel := generationtest.BuildRelease(t, generationtest.CommitB)
	srv := generationtest.NewServer(t, cur, sel)
	payload := t.TempDir()
	for _, r := range []*generationtest.Release{cur, sel} {
		if err := console.Publish(payload, console.ReleaseFiles{Files: r.Files, Artifacts: r.Artifacts}); err != nil {
			t.Fatal(err)
		}
	}
	if err := console.Activate(payload, cur.Commit); err != nil {
		t.Fatal(err)
	}
	// The console's current release is A (the payload above, activated,
	// is the bundle's source).
	for _, name := range []string{release.ManifestName, release.SumsName} {
		data := cur.Files[name]
		srv.Serve("/node-install/"+name, func(w http.ResponseWriter, r *http.Request) { w.Write(data) })
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(srv.CA)
	host := layout.Host{Root: t.TempDir()}
	os.MkdirAll(filepath.Join(host.Root, "var/lib"), 0o755)

	for _, providerName := range []string{release.ProviderDocker, release.ProviderMicrosandbox} {
		spec := sel.Spec(t, providerName, 1)
		check := func(avail int64, edit func(*SpaceCheck)) (Check, []string) {
			t.Helper()
			asked := fakeSpace(t, avail)
			sc := &SpaceCheck{Host: host, Provider: providerName, Spec: spec, SourceURL: srv.URL, Roots: trust.Only(pool)}
			if edit != nil {
				edit(sc)
			}
			return sc.Run(context.Background()), *asked
		}
		need := spaceNeed(cur, sel, providerName, false)
		t.Run(providerName, func(t *testing.T) {
			if c, asked := check(need, nil); c.Failed() || c.Skipped != "" || len(asked) != 1 || asked[0] != filepath.Join(host.Root, "var/lib") {
				t.Errorf("exactly enough space: %+v, statfs of %v", c, asked)
			}
			c, _ := check(need-1, nil)
			err := FirstRefusal([]Check{c})
			if err == nil {
				t.Fatal("one byte short: no refusal")
			}
			for _, s := range []string{"need " + strconv.FormatInt(need, 10) + " bytes", "has " + strconv.FormatInt(need-1, 10) + " bytes available", filepath.Join(host.Root, "var/lib")} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("refusal %q does not name %q", err, s)
				}
			}
			if !strings.HasSuffix(workflow.Message(err), ". Nothing was changed.") {
				t.Errorf("refusal %q", err)
			}
			if c, _ := check(0, func(sc *SpaceCheck) { sc.Skip = spaceSkip(host, generationtest.InstallationID, true) }); c.Skipped == "" || c.Failed() {
				t.Errorf("known node: %+v", c)
			}
			// An unreadable console: skipped, the downloads step checks.
			c, asked := check(0, func(sc *SpaceCheck) { sc.SourceURL = "https://127.0.0.1:1" })
			if c.Failed() || !strings.Contains(c.Skipped, "the downloads step checks the space") || len(asked) != 0 {
				t.Errorf("unreadable console: %+v, statfs of %v", c, asked)
			}
			// Without Core's specification (the check command): the
			// current release's Runtime.
			if c, _ := check(spaceNeed(cur, cur, providerName, false), func(sc *SpaceCheck) { sc.Spec = nil }); c.Failed() {
				t.Errorf("current release's Runtime: %v", c.Err)
			}
		})
	}
	t.Run("warm Docker image", func(t *testing.T) {
		spec := sel.Spec(t, release.ProviderDocker, 1)
		fakeSpace(t, spaceNeed(cur, sel, release.ProviderDocker, true))
		sc := &SpaceCheck{Host: host, Provider: release.ProviderDocker, Spec: spec, SourceURL: srv.URL, Roots: trust.Only(pool),
			Images: heldImage{sel.Image}}
		if c := sc.Run(context.Background()); c.Failed() {
			t.Errorf("warm image: %v", c.Err)
		}
		sc.Images = heldImage{cur.Image}
		if c := sc.Run(context.Background()); !c.Failed() {
			t.Error("another release's image counted as warm")
		}
	})
	t.Run("interrupted first run", func(t *testing.T) {
		j := JournalPath(host, generationtest.InstallationID)
		os.MkdirAll(filepath.Dir(j), 0o700)
		os.WriteFile(j, nil, 0o600)
		defer os.RemoveAll(filepath.Join(host.Root, "var/lib/oac-node-install"))
		if s := spaceSkip(host, generationtest.InstallationID, false); !strings.Contains(s, "interrupted") {
			t.Errorf("skip %q", s)
		}
	})
	t.Run("bundle", func(t *testing.T) {
		bundle := filepath.Join(t.TempDir(), "bundle")
		if _, err := console.WriteBundle(payload, bundle, []string{sel.Commit}); err != nil {
			t.Fatal(err)
		}
		spec := sel.Spec(t, release.ProviderMicrosandbox, 1)
		need := spaceNeed(cur, sel, release.ProviderMicrosandbox, false)
		for _, tc := range []struct {
			avail int64
			fail  bool
		}{{need, false}, {need - 1, true}} {
			fakeSpace(t, tc.avail)
			sc := &SpaceCheck{Host: host, Provider: release.ProviderMicrosandbox, Spec: spec, Bundle: bundle, SourceURL: "https://127.0.0.1:1"}
			if c := sc.Run(context.Background()); c.Failed() != tc.fail || c.Skipped != "" {
				t.Errorf("%d bytes available: %+v", tc.avail, c)
			}
		}
		// The check command counts from a bundle too, with the current
		// release's Runtime (it has no specification); without a bundle it
		// contacts no console and skips.
		pr := Probe{Options: Options{InstallationID: generationtest.InstallationID, Bundle: bundle}, Host: host}
		fakeSpace(t, spaceNeed(cur, cur, release.ProviderMicrosandbox, false)-1)
		if c := pr.space(context.Background(), release.ProviderMicrosandbox, false); !c.Failed() {
			t.Errorf("check command, one byte short: %+v", c)
		}
		pr.Options.Bundle = ""
		if c := pr.space(context.Background(), release.ProviderMicrosandbox, false); c.Failed() || !strings.Contains(c.Skipped, "which check reads with Core's configuration") {
			t.Errorf("check command without a bundle: %+v", c)
		}
	})
}

// A new node without the space refuses in the preflight with nothing
// changed and no download; a registered rerun leaves the count to the
// downloads step (which finds everything in place).
func TestInstallRefusesWithoutSpace(t *testing.T) {
	r := newMSBRun(t, provider.MaxStorePath)
	rel := generationtest.BuildRelease(t, generationtest.CommitA)
	fakeSpace(t, spaceNeed(rel, rel, release.ProviderMicrosandbox, false)-1)
	before := r.tree(t, true)
	_, err := r.run(t)
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Check.Name != CheckSpaceName || !strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
		t.Fatalf("error %v, want the space refusal", err)
	}
	if d := generationtest.DiffHost(before, r.tree(t, true)); d != "" {
		t.Errorf("the refusal changed:\n%s", d)
	}
	if got := r.nodeFileRequests(); len(got) != 0 {
		t.Errorf("node files downloaded: %v", got)
	}
	if calls := r.accts.Calls(); len(calls) != 0 {
		t.Errorf("account calls: %v", calls)
	}
	// With the space, the same command installs; its registered rerun
	// does not count again.
	fakeSpace(t, 1<<40)
	r.installed(t)
	asked := fakeSpace(t, 0)
	rep, err := r.run(t)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("rerun: %v %+v", err, rep)
	}
	if len(*asked) != 0 {
		t.Errorf("the registered rerun's preflight counted the space of %v", *asked)
	}
}

// From a bundle, a Docker node without the space refuses before any
// change, counting the bundle's releases (Core selected B's Runtime).
func TestInstallFromBundleRefusesWithoutSpace(t *testing.T) {
	r := newBundleRun(t)
	r.writeBundle(t, r.sel.Commit)
	fakeSpace(t, spaceNeed(r.cur, r.sel, release.ProviderDocker, false)-1)
	host := treetest.Snapshot(t, r.f.host.Root, treetest.Options{})
	_, err := Run(context.Background(), r.cmd)
	var ref *Refusal
	if !errors.As(err, &ref) || ref.Check.Name != CheckSpaceName || !strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
		t.Fatalf("error %v, want the space refusal", err)
	}
	if d := generationtest.DiffHost(host, treetest.Snapshot(t, r.f.host.Root, treetest.Options{})); d != "" {
		t.Errorf("the host root changed:\n%s", d)
	}
	fakeSpace(t, spaceNeed(r.cur, r.sel, release.ProviderDocker, false))
	if rep, err := Run(context.Background(), r.cmd); err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("with exactly the space: %v %+v", err, rep)
	}
}
