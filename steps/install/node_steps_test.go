package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
)

// fakeRegistrar stands in for `oac-node register`: it checks the token
// file, writes identity.json as the node program does, or rejects.
type fakeRegistrar struct {
	calls  int
	token  string
	reject *RegistrationRejected
}

func (r *fakeRegistrar) Register(_ context.Context, req RegisterRequest) error {
	r.calls++
	data, err := os.ReadFile(req.TokenFile)
	if err != nil {
		return err
	}
	fi, _ := os.Lstat(req.TokenFile)
	if fi.Mode().Perm() != 0o600 || strings.TrimSpace(string(data)) != r.token {
		return fmt.Errorf("bad token file %v %q", fi.Mode(), data)
	}
	if r.reject != nil {
		return r.reject
	}
	return os.WriteFile(filepath.Join(req.StateDir, "identity.json"), []byte("{}\n"), 0o600)
}

type installFixture struct {
	t      *testing.T
	home   string
	srv    *generationtest.Server
	rel    *fixtureRelease
	spec   *release.Specification
	docker *dockertest.FileEngine
	reg    *fakeRegistrar
	helper []byte
	// progress, when set, is told the downloads' progress.
	progress func(name string, done, total int64)
}

func newInstallFixture(t *testing.T) *installFixture {
	home := filepath.Join(t.TempDir(), "home")
	mkdir(t, home)
	rel := buildRelease(t, commitA)
	srv := newTestServer(t, rel)
	for _, name := range []string{release.ManifestName, release.SumsName} {
		data := rel.Files[name]
		srv.Serve("/node-install/"+name, func(w http.ResponseWriter, r *http.Request) { w.Write(data) })
	}
	return &installFixture{
		t: t, home: home, srv: srv, rel: rel, spec: rel.Spec(t, release.ProviderDocker, 2),
		docker: &dockertest.FileEngine{Path: filepath.Join(home, "..", "engine.json")},
		reg:    &fakeRegistrar{token: "tok-123"},
		helper: []byte("installer bytes"),
	}
}

func (f *installFixture) options() NodeOptions {
	return NodeOptions{
		InstallationID: nodeTestID, Home: f.home, UID: os.Getuid(), SourceURL: f.srv.URL, CoreOrigin: f.srv.URL, CoreCA: f.srv.CA,
		Configuration: &core.Configuration{InstallationID: nodeTestID, Provider: release.ProviderDocker, CoreURL: f.srv.URL, Generation: 1,
			Specification: f.spec, SpecificationDigest: f.spec.Digest(), MaxActive: 2, MaxRetained: 4},
		Docker:   func(context.Context, string) (noderoot.Docker, error) { return f.docker, nil },
		Download: download.Options{RetrySleeps: []time.Duration{time.Millisecond}, StallWindow: 5 * time.Second},
		Helper:   func() ([]byte, error) { return f.helper, nil },
		Register: f.reg,
		Progress: f.progress,
	}
}

// run runs the service-account steps in order, as root's engine would, and
// returns the first error.
func (f *installFixture) run(token string) error {
	f.t.Helper()
	if err := EnsureNodeRoot(f.home, nodeTestID, os.Getuid()); err != nil {
		return err
	}
	e, err := NewNodeEnv(context.Background(), f.options())
	if err != nil {
		return err
	}
	defer e.Close()
	e.SetToken(token)
	steps := nodeSteps(e)
	facts := workflow.Facts{}
	for _, st := range []workflow.State{workflow.InstallNodeRoot, workflow.InstallMetadata, workflow.InstallDownloads, workflow.InstallHelper,
		workflow.InstallLease, workflow.InstallRuntime, workflow.InstallNetwork, workflow.InstallProviderConfig, workflow.InstallRegister} {
		res, err := steps[st].Run(context.Background(), facts)
		if err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
		for k, v := range res.Facts {
			facts[k] = v
		}
	}
	return nil
}

func (f *installFixture) root(rel ...string) string {
	return filepath.Join(append([]string{f.home, ".oac", "nodes", nodeTestID}, rel...)...)
}

func TestInstallStepsBuildTheNodeRoot(t *testing.T) {
	f := newInstallFixture(t)
	if err := f.run("tok-123"); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"installation.json", "registered.json", "preparation.json", "runtime-artifacts.json", "provider.json",
		"core-ca.pem", "runtime/seccomp.json", "images/runtime.tar.gz", "state/node/identity.json", "state/node/generations/1.lease",
		"state/node/generations/1.lease-identity", layout.HelperLauncherFile} {
		fi, err := os.Lstat(f.root(rel))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", rel, fi, err)
		}
	}
	for _, rel := range []string{release.PathNode, layout.HelperFile} {
		if fi, err := os.Lstat(f.root(rel)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", rel, fi, err)
		}
	}
	if _, err := os.Lstat(f.root(noderoot.PathUnpacked)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the unpacked archive stays after the import: %v", err)
	}
	inst, _ := os.ReadFile(f.root("installation.json"))
	reg, _ := os.ReadFile(f.root("registered.json"))
	if !bytes.Equal(inst, reg) || !strings.Contains(string(inst), `"source_commit": "`+commitA+`"`) {
		t.Errorf("installation.json %s registered.json %s", inst, reg)
	}
	cfg, _ := os.ReadFile(f.root("provider.json"))
	if !strings.Contains(string(cfg), f.rel.Image.ConfigDigest) || !strings.Contains(string(cfg), "oac-node-"+nodeTestID) {
		t.Errorf("provider.json %s", cfg)
	}
	if st, _ := f.docker.State(); st.Nets["oac-node-"+nodeTestID][InstallationLabel] != nodeTestID {
		n := st.Nets["oac-node-"+nodeTestID]
		t.Errorf("network labels %v", n)
	}
	if left, _ := filepath.Glob(f.root(".enrollment-*")); len(left) != 0 {
		t.Errorf("token files left: %v", left)
	}

	// A rerun of the registered node needs no token, downloads nothing,
	// registers nothing and changes no file.
	before := treetest.Snapshot(t, f.home, treetest.Options{})
	gets := f.srv.Count("/node-install/releases/" + commitA + "/artifacts/" + f.rel.Manifest.Artifacts[release.PathRuntimeImage].Filename)
	if err := f.run(""); err != nil {
		t.Fatal(err)
	}
	if d := treetest.Diff(before, treetest.Snapshot(t, f.home, treetest.Options{})); d != "" {
		t.Errorf("the rerun changed files:\n%s", d)
	}
	if st, _ := f.docker.State(); f.reg.calls != 1 || st.NetworkCreates != 1 {
		t.Errorf("registrations %d, network creations %d", f.reg.calls, st.NetworkCreates)
	}
	if g := f.srv.Count("/node-install/releases/" + commitA + "/artifacts/" + f.rel.Manifest.Artifacts[release.PathRuntimeImage].Filename); g != gets {
		t.Errorf("the rerun downloaded the archive again (%d requests, was %d)", g, gets)
	}

	// The image was deleted: the rerun imports it again without enrolling.
	if err := f.docker.RemoveImage(f.rel.Image); err != nil {
		t.Fatal(err)
	}
	if err := f.run(""); err != nil {
		t.Fatal(err)
	}
	if f.reg.calls != 1 {
		t.Errorf("a re-import enrolled again")
	}

	// A registered node keeps its node program.
	if err := os.WriteFile(f.root(release.PathNode), []byte("another program"), 0o700); err != nil {
		t.Fatal(err)
	}
	err := f.run("")
	var ref *workflow.Refusal
	if !errors.As(err, &ref) || !strings.Contains(err.Error(), "--uninstall") {
		t.Fatalf("a different node program on a registered node: %v", err)
	}
}

func TestInstallStepsReplaceUnregisteredLeftovers(t *testing.T) {
	f := newInstallFixture(t)
	f.reg.reject = &RegistrationRejected{Status: 401, Code: "invalid_node_credential"}
	err := f.run("tok-123")
	var rej *RegistrationRejected
	if !errors.As(err, &rej) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("rejected registration: %v", err)
	}
	if _, err := os.Lstat(f.root("registered.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("registered.json after a rejection: %v", err)
	}
	if left, _ := filepath.Glob(f.root(".enrollment-*")); len(left) != 0 {
		t.Errorf("token files left after a rejection: %v", left)
	}
	// An earlier attempt's different node program and helper are
	// disposable: the next run replaces them and registers.
	os.WriteFile(f.root(release.PathNode), []byte("stale"), 0o700)
	os.WriteFile(f.root(layout.HelperFile), []byte("stale"), 0o700)
	f.reg.reject = nil
	if err := f.run("tok-123"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(f.root(layout.HelperFile)); !bytes.Equal(got, f.helper) {
		t.Errorf("helper %q", got)
	}
	if got, _ := os.ReadFile(f.root(release.PathNode)); !bytes.Equal(got, f.rel.Bytes[release.PathNode]) {
		t.Errorf("the stale node program stayed")
	}
}

func TestInstallStepsAddressMismatchDiscardsUnregisteredState(t *testing.T) {
	f := newInstallFixture(t)
	f.reg.reject = &RegistrationRejected{Status: 409, Code: CodeAddressMismatch}
	err := f.run("tok-123")
	if !strings.Contains(fmt.Sprint(err), "public URL changed") {
		t.Fatalf("got %v", err)
	}
	for _, rel := range []string{"installation.json", "provider.json"} {
		if _, err := os.Lstat(f.root(rel)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s kept after the address mismatch", rel)
		}
	}
	if _, err := os.Lstat(f.root("images/runtime.tar.gz")); err != nil {
		t.Errorf("downloads must stay: %v", err)
	}
}

func TestInstallStepsWithoutTokenOnNewNode(t *testing.T) {
	f := newInstallFixture(t)
	err := f.run("")
	if err == nil || !strings.Contains(err.Error(), "enrollment token") {
		t.Fatalf("got %v", err)
	}
	if f.reg.calls != 0 {
		t.Fatal("registered without a token")
	}
}
