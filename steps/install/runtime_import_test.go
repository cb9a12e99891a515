package install

import (
	"context"
	"errors"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/workflow"
)

// spyDocker is the file engine, noting what lies in images/ while a load
// runs.
type spyDocker struct {
	*dockertest.FileEngine
	dir   string
	seen  [][]string
	loads int
}

func (s *spyDocker) ImageLoadReader(ctx context.Context, r io.Reader, name string) error {
	s.loads++
	ents, _ := os.ReadDir(s.dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	s.seen = append(s.seen, names)
	return s.FileEngine.ImageLoadReader(ctx, r, name)
}

// TestInstallRuntimeLoadsTheVerifiedArchive: the Docker import hands the
// engine the downloaded runtime.tar.gz's bytes, with no unpacked copy
// beside it at any time; an archive whose bytes are not the release's is
// refused as a conflict, and the engine holds nothing of it.
func TestInstallRuntimeLoadsTheVerifiedArchive(t *testing.T) {
	f := newInstallFixture(t)
	spy := &spyDocker{FileEngine: f.docker, dir: f.root("images")}
	opts := f.options()
	opts.Docker = func(context.Context, string) (noderoot.Docker, error) { return spy, nil }
	all := []workflow.State{workflow.InstallNodeRoot, workflow.InstallMetadata, workflow.InstallDownloads, workflow.InstallHelper,
		workflow.InstallLease, workflow.InstallRuntime}
	run := func(token string, states []workflow.State) error { return runNodeSteps(f, opts, token, states...) }
	if err := run("tok-123", all); err != nil {
		t.Fatal(err)
	}
	if spy.loads != 1 || len(spy.seen) != 1 || len(spy.seen[0]) != 1 || spy.seen[0][0] != "runtime.tar.gz" {
		t.Fatalf("loads %d; images/ during the load: %v", spy.loads, spy.seen)
	}

	// The image is gone and the archive of a registered node holds other
	// bytes of the same size when the runtime step runs again: refused as
	// a conflict (the load's stream ends in the refusal before the
	// archive's end), the engine holding nothing, the file left as it is.
	// (Before registration it is replaced: TestRuntimeReplacesAChangedArchiveBeforeRegistration.)
	if err := f.docker.RemoveImage(f.rel.Image); err != nil {
		t.Fatal(err)
	}
	registerFixtureNode(t, f)
	gz := filepath.Join(spy.dir, "runtime.tar.gz")
	b, err := os.ReadFile(gz)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(gz, b, 0o600); err != nil {
		t.Fatal(err)
	}
	err = run("", []workflow.State{workflow.InstallRuntime})
	if !errors.Is(err, noderoot.ErrConflict) || !errors.Is(err, image.ErrArchiveMismatch) {
		t.Fatalf("a changed archive: %v", err)
	}
	if st, err := f.docker.State(); err != nil || len(st.Images) != 0 {
		t.Fatalf("the engine holds the image of a changed archive: %+v, %v", st.Images, err)
	}
	if after, _ := os.ReadFile(gz); string(after) != string(b) {
		t.Error("the changed archive was replaced")
	}
}

// earlyFailingDocker is the file engine whose loads read a little of the
// stream, then fail as an engine that rejects what it read would.
type earlyFailingDocker struct {
	*dockertest.FileEngine
}

func (e earlyFailingDocker) ImageLoadReader(_ context.Context, r io.Reader, name string) error {
	io.ReadFull(r, make([]byte, 100))
	return errors.New("the engine refused it: archive/tar: invalid tar header")
}

// TestInstallRuntimeEngineFailsFirst: when the engine fails the load
// before the proof has concluded, the archive is proven to the end to tell
// the operator which is at fault: other bytes than the release's (of a
// registered node, whose files are not replaced) are
// refused as a conflict (the engine's words kept), the release's bytes
// leave the engine's error as it is.
func TestInstallRuntimeEngineFailsFirst(t *testing.T) {
	f := newInstallFixture(t)
	opts := f.options()
	opts.Docker = func(context.Context, string) (noderoot.Docker, error) { return earlyFailingDocker{f.docker}, nil }
	run := func(states ...workflow.State) error { return runNodeSteps(f, opts, "", states...) }
	err := run(workflow.InstallNodeRoot, workflow.InstallMetadata, workflow.InstallDownloads, workflow.InstallHelper,
		workflow.InstallLease, workflow.InstallRuntime)
	if err == nil || errors.Is(err, noderoot.ErrConflict) || !strings.Contains(err.Error(), "invalid tar header") {
		t.Fatalf("the release's archive, the engine failing: %v", err)
	}
	registerFixtureNode(t, f)
	gz := f.root("images", "runtime.tar.gz")
	b, err := os.ReadFile(gz)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(gz, b, 0o600); err != nil {
		t.Fatal(err)
	}
	err = run(workflow.InstallRuntime)
	if !errors.Is(err, noderoot.ErrConflict) || !errors.Is(err, image.ErrArchiveMismatch) || !strings.Contains(err.Error(), "invalid tar header") {
		t.Fatalf("a changed archive, the engine failing first: %v", err)
	}
}

// runNodeSteps opens the fixture's node with opts, as the service-account
// child does, and runs states in order, each given the facts of those
// before it.
func runNodeSteps(f *installFixture, opts NodeOptions, token string, states ...workflow.State) error {
	if err := EnsureNodeRoot(f.home, nodeTestID, os.Getuid()); err != nil {
		return err
	}
	e, err := NewNodeEnv(context.Background(), opts)
	if err != nil {
		return err
	}
	defer e.Close()
	e.SetToken(token)
	steps := nodeSteps(e)
	facts := workflow.Facts{}
	for _, st := range states {
		res, err := steps[st].Run(context.Background(), facts)
		if err != nil {
			return err
		}
		maps.Copy(facts, res.Facts)
	}
	return nil
}

// registerFixtureNode gives the fixture's node the record of its registration:
// from then on none of its files is replaced (CONTRACT §10).
func registerFixtureNode(t *testing.T, f *installFixture) {
	t.Helper()
	if err := os.WriteFile(layout.Node{Root: f.root()}.Registered(), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Before registration a cached archive whose bytes differ from the
// release's is disposable (CONTRACT §10, R:25): the runtime step, which
// proves the bytes as it loads them, downloads it again and loads the
// release's, instead of failing at every rerun; the engine never holds an
// image of the changed bytes.
func TestRuntimeReplacesAChangedArchiveBeforeRegistration(t *testing.T) {
	f := newInstallFixture(t)
	opts := f.options()
	run := func(token string, states ...workflow.State) error { return runNodeSteps(f, opts, token, states...) }
	if err := run("tok-123", workflow.InstallNodeRoot, workflow.InstallMetadata, workflow.InstallDownloads, workflow.InstallHelper,
		workflow.InstallLease); err != nil {
		t.Fatal(err)
	}
	gz := f.root("images", "runtime.tar.gz")
	want, err := os.ReadFile(gz)
	if err != nil {
		t.Fatal(err)
	}
	b := append([]byte(nil), want...)
	b[len(b)/2] ^= 1
	if err := os.WriteFile(gz, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run("", workflow.InstallRuntime); err != nil {
		t.Fatalf("the runtime step with a changed archive before registration: %v", err)
	}
	if after, _ := os.ReadFile(gz); string(after) != string(want) {
		t.Error("the changed archive was not replaced by the release's")
	}
	if st, err := f.docker.State(); err != nil || len(st.Images) != 1 {
		t.Fatalf("the engine's images: %+v, %v", st.Images, err)
	}
}
