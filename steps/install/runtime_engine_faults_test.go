package install

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/testsupport/testengine"
	"github.com/openagentcore/oac-node-install/workflow"
)

// The runtime step's import against a private Docker Engine that fails in
// the middle of it: killed, out of space, stopped; and two imports of the
// same Runtime image at once. Each fault ends the step with an error that
// names the engine and says what to do, leaves the engine without any
// image (a private engine holds only what the test loads) and without an
// import in progress, and the step run again once the engine is back
// imports the image with its verified identity.

// faultPayload is the Runtime image's payload in these tests: large enough
// that the engine is still reading the stream when the fault comes (the
// fault comes after half of it), small enough to stay cheap.
const faultPayload = 16 << 20

// faultRelease is the release of these tests, built once per test binary.
func faultRelease(t *testing.T) *fixtureRelease {
	return generationtest.BuildSizedRelease(t, commitA, faultPayload, 2)
}

// privateEngine starts a private Docker Engine for the test (it skips with
// one line when it cannot) and returns it with the installer's adapter of
// it and a raw client, for the test's own checks.
func privateEngine(t *testing.T, o testengine.Options) (*testengine.Engine, *docker.Client, *client.Client) {
	t.Helper()
	eng := testengine.Start(t, o)
	dk, err := docker.New("unix://" + eng.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dk.Close() })
	raw, err := client.New(client.WithHost("unix://" + eng.Socket))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return eng, dk, raw
}

// engineFixture is an install fixture of rel whose steps before the
// runtime step have run, its Docker Engine being dk.
func engineFixture(t *testing.T, rel *fixtureRelease, dk noderoot.Docker) *installFixture {
	t.Helper()
	f := newInstallFixtureFor(t, rel)
	opts := f.options()
	opts.Docker = func(context.Context, string) (noderoot.Docker, error) { return dk, nil }
	if err := runNodeSteps(f, opts, "tok-123", workflow.InstallNodeRoot, workflow.InstallMetadata, workflow.InstallDownloads,
		workflow.InstallHelper, workflow.InstallLease); err != nil {
		t.Fatal(err)
	}
	return f
}

// runtimeOn runs the fixture's runtime step with dk as its engine and
// returns the image it reports.
func runtimeOn(ctx context.Context, f *installFixture, dk noderoot.Docker) (string, error) {
	opts := f.options()
	opts.Docker = func(context.Context, string) (noderoot.Docker, error) { return dk, nil }
	e, err := NewNodeEnv(ctx, opts)
	if err != nil {
		return "", err
	}
	defer e.Close()
	res, err := nodeSteps(e)[workflow.InstallRuntime].Run(ctx, workflow.Facts{})
	return res.Facts[factImageID], err
}

// checkRuntimeDone: the runtime step run again (the rerun) imports the
// image, which resolves to the release's identity, and its check then
// finds it done.
func checkRuntimeDone(t *testing.T, f *installFixture, dk *docker.Client) string {
	t.Helper()
	cx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id, err := runtimeOn(cx, f, dk)
	if err != nil {
		t.Fatalf("the rerun's runtime step: %v", err)
	}
	if id != f.rel.Image.ConfigDigest && id != f.rel.Image.ManifestDigest {
		t.Fatalf("the rerun's runtime step reports image %q, want one of %+v", id, f.rel.Image)
	}
	if got, found, err := image.Resolve(cx, dk, f.rel.Image); err != nil || !found || got != id {
		t.Fatalf("after the rerun the engine resolves %q, %v, %v; want %s", got, found, err, id)
	}
	e, err := NewNodeEnv(cx, f.optionsWith(dk))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if out, _, err := nodeSteps(e)[workflow.InstallRuntime].(workflow.Checker).Check(cx, workflow.Facts{}); err != nil || out != workflow.Done {
		t.Fatalf("the runtime step's check after the rerun: %v, %v", out, err)
	}
	return id
}

// optionsWith is the fixture's options with dk as its engine.
func (f *installFixture) optionsWith(dk noderoot.Docker) NodeOptions {
	opts := f.options()
	opts.Docker = func(context.Context, string) (noderoot.Docker, error) { return dk, nil }
	return opts
}

// waitNothingLoaded waits (up to a minute: an engine fails an unfinished
// load once it reads the stream's cut) until the engine holds no image at
// all and no import is in progress or left in its data root, and fails the
// test otherwise.
func waitNothingLoaded(t *testing.T, eng *testengine.Engine, dk *docker.Client, raw *client.Client, rel *fixtureRelease) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		cx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		list, lerr := raw.ImageList(cx, client.ImageListOptions{All: true})
		id, found, rerr := image.Resolve(cx, dk, rel.Image)
		cancel()
		imports, _ := filepath.Glob(filepath.Join(dataRoot(eng), "tmp", "docker-import-*"))
		if lerr == nil && len(list.Items) == 0 && rerr == nil && !found && len(imports) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the fault the engine holds %d images (%v), the Runtime image (%q %v %v) or imports %v", len(list.Items), lerr, id, found, rerr, imports)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// midImport is the engine whose loads pause once half of the stream has
// been handed on: it closes mid, and reads on once resume is closed (the
// test makes its fault in between).
type midImport struct {
	*docker.Client
	mid, resume chan struct{}
}

func newMidImport(dk *docker.Client) *midImport {
	return &midImport{Client: dk, mid: make(chan struct{}), resume: make(chan struct{})}
}

func (m *midImport) ImageLoadReader(ctx context.Context, r io.Reader, name string) error {
	return m.Client.ImageLoadReader(ctx, &faultAfter{r: r, n: faultPayload / 2, fault: func() {
		close(m.mid)
		<-m.resume
	}}, name)
}

// runtimeWithFault runs the fixture's runtime step with m as its engine and,
// once the engine has been handed half of the stream and is importing it
// (an import directory in its data root), calls fault; it returns the
// step's error and how long the step took after the fault.
func runtimeWithFault(t *testing.T, ctx context.Context, f *installFixture, eng *testengine.Engine, m *midImport, fault func()) (error, time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := runtimeOn(ctx, f, m)
		done <- err
	}()
	select {
	case <-m.mid:
	case err := <-done:
		t.Fatalf("the runtime step ended before the middle of the import: %v", err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if imports, _ := filepath.Glob(filepath.Join(dataRoot(eng), "tmp", "docker-import-*")); len(imports) > 0 {
			t.Logf("the fault comes while the engine imports into %s", filepath.Base(imports[0]))
			break
		}
		if time.Now().After(deadline) {
			close(m.resume)
			<-done
			t.Fatal("the engine began no import")
		}
	}
	fault()
	start := time.Now()
	close(m.resume)
	err := <-done
	return err, time.Since(start)
}

// dataRoot is the engine's data root (testengine's layout: data beside the
// socket's directory).
func dataRoot(eng *testengine.Engine) string {
	return filepath.Join(filepath.Dir(eng.SocketDir), "data")
}

// faultAfter reads r, calling fault once n bytes have passed.
type faultAfter struct {
	r     io.Reader
	n     int64
	seen  int64
	fault func()
}

func (f *faultAfter) Read(b []byte) (int, error) {
	if f.fault != nil && f.seen >= f.n {
		fault := f.fault
		f.fault = nil
		fault()
	}
	n, err := f.r.Read(b)
	f.seen += int64(n)
	return n, err
}

// clearAdvice fails the test unless err names the Docker Engine and says
// to rerun the command.
func clearAdvice(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: the runtime step succeeded", what)
	}
	if msg := err.Error(); !strings.Contains(msg, "Docker Engine") || !strings.Contains(msg, "rerun the same command") {
		t.Fatalf("%s: %v; want the Docker Engine named and the next step", what, err)
	}
	t.Logf("%s: %v", what, err)
}

// TestRuntimeImportEngineKilled: the engine is killed (SIGKILL) while it
// imports the Runtime image. The step fails saying the engine broke off
// and to rerun; the engine, started again, holds no image and no import;
// the rerun imports the image.
func TestRuntimeImportEngineKilled(t *testing.T) {
	eng, dk, raw := privateEngine(t, testengine.Options{})
	rel := faultRelease(t)
	f := engineFixture(t, rel, dk)
	cx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err, _ := runtimeWithFault(t, cx, f, eng, newMidImport(dk), eng.Kill)
	clearAdvice(t, "engine killed mid-import", err)
	eng.Restart()
	waitNothingLoaded(t, eng, dk, raw, rel)
	t.Logf("after the restart: no image, no import; the rerun imports %s", checkRuntimeDone(t, f, dk))
}

// TestRuntimeImportEngineDiskFull: the engine's data disk fills while it
// imports the Runtime image. The step fails saying the engine's disk is
// full, where to free space, and to rerun; the engine holds no image and
// no import; with the space back, the rerun imports the image.
func TestRuntimeImportEngineDiskFull(t *testing.T) {
	eng, dk, raw := privateEngine(t, testengine.Options{DataRootSize: 96 << 20})
	rel := faultRelease(t)
	f := engineFixture(t, rel, dk)
	// Leave the engine 4 MiB: the import runs out of space in the middle
	// of the archive.
	filler := filepath.Join(dataRoot(eng), "filler")
	var st unix.Statfs_t
	if err := unix.Statfs(dataRoot(eng), &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	if err := os.WriteFile(filler, make([]byte, free-4<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("the engine's data root has 4 MiB left for an image of %d MiB", rel.Manifest.Artifacts[release.PathRuntimeImage].UnpackedSize>>20)
	cx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := runtimeOn(cx, f, dk)
	clearAdvice(t, "engine's disk full mid-import", err)
	if !strings.Contains(err.Error(), "disk is full") {
		t.Fatalf("the error does not say the engine's disk is full: %v", err)
	}
	waitNothingLoaded(t, eng, dk, raw, rel)
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// The engine may still be removing what the cut import wrote (a
	// layer's directory): the rerun starts once the space is back.
	need := int64(3 * rel.Manifest.Artifacts[release.PathRuntimeImage].UnpackedSize)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err := unix.Statfs(dataRoot(eng), &st); err != nil {
			t.Fatal(err)
		}
		if free = int64(st.Bavail) * st.Bsize; free >= need || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("with the space back (%d MiB free) the rerun imports %s", free>>20, checkRuntimeDone(t, f, dk))
}

// TestRuntimeImportEngineStopped: the engine is stopped (SIGSTOP) while it
// imports the Runtime image. The step does not wait for it for ever: it
// fails once the engine has answered no ping for docker.LoadStallTimeout
// (shortened here), saying so and to rerun. Continued, the engine fails
// the cut import and holds no image; the rerun imports the image.
func TestRuntimeImportEngineStopped(t *testing.T) {
	eng, dk, raw := privateEngine(t, testengine.Options{})
	old := docker.LoadStallTimeout
	docker.LoadStallTimeout = 2 * time.Second
	t.Cleanup(func() { docker.LoadStallTimeout = old })
	rel := faultRelease(t)
	f := engineFixture(t, rel, dk)
	cx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err, took := runtimeWithFault(t, cx, f, eng, newMidImport(dk), eng.Pause)
	clearAdvice(t, "engine stopped mid-import", err)
	if !errors.Is(err, docker.ErrNoAnswer) || cx.Err() != nil {
		t.Fatalf("the step ended %v, not at its stall deadline: %v", took, err)
	}
	if took > 30*time.Second {
		t.Fatalf("the step took %v to give up on a stopped engine", took)
	}
	t.Logf("the step gave up on the stopped engine after %v", took.Round(100*time.Millisecond))
	eng.Continue()
	waitNothingLoaded(t, eng, dk, raw, rel)
	t.Logf("continued: no image, no import; the rerun imports %s", checkRuntimeDone(t, f, dk))
}

// TestRuntimeImportTwiceAtOnce: two installations on one host import the
// same Runtime image into the same engine at once. Both end with the one
// image of the verified identity (a load that fails instead says what to
// do, and its rerun converges); the engine holds that image only.
func TestRuntimeImportTwiceAtOnce(t *testing.T) {
	eng, dk, raw := privateEngine(t, testengine.Options{})
	rel := faultRelease(t)
	fs := []*installFixture{engineFixture(t, rel, dk), engineFixture(t, rel, dk)}
	cx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Each load waits, half of its stream handed on, until the other has
	// come as far: the engine imports both at once.
	var half sync.WaitGroup
	half.Add(len(fs))
	both := make(chan struct{})
	importing := make(chan []string, 1)
	go func() {
		half.Wait()
		imports, _ := filepath.Glob(filepath.Join(dataRoot(eng), "tmp", "docker-import-*"))
		importing <- imports
		close(both)
	}()
	ids, errs := make([]string, len(fs)), make([]error, len(fs))
	var wg sync.WaitGroup
	for i, f := range fs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = runtimeOn(cx, f, &meetHalfway{Client: dk, half: &half, both: both})
		}()
	}
	wg.Wait()
	select {
	case imports := <-importing:
		t.Logf("both loads halfway, the engine imports into %d directories", len(imports))
	default:
		t.Fatal("the two loads never were in the engine at once")
	}
	for i, f := range fs {
		if errs[i] != nil {
			clearAdvice(t, "an import beside another", errs[i])
		} else if ids[i] != rel.Image.ConfigDigest && ids[i] != rel.Image.ManifestDigest {
			t.Fatalf("import %d reports image %q, want one of %+v", i, ids[i], rel.Image)
		}
		t.Logf("import %d: %q, %v; its rerun finds %s", i, ids[i], errs[i], checkRuntimeDone(t, f, dk))
	}
	list, err := raw.ImageList(cx, client.ImageListOptions{All: true})
	if err != nil || len(list.Items) != 1 || (list.Items[0].ID != rel.Image.ConfigDigest && list.Items[0].ID != rel.Image.ManifestDigest) {
		t.Fatalf("the engine's images after both imports: %+v, %v; want only %+v", list.Items, err, rel.Image)
	}
	if imports, _ := filepath.Glob(filepath.Join(dataRoot(eng), "tmp", "docker-import-*")); len(imports) != 0 {
		t.Fatalf("imports left in the engine's data root: %v", imports)
	}
}

// meetHalfway is the engine whose loads, half of the stream handed on,
// wait (up to a minute) until every load of the group has come as far.
type meetHalfway struct {
	*docker.Client
	half *sync.WaitGroup
	both chan struct{}
}

func (m *meetHalfway) ImageLoadReader(ctx context.Context, r io.Reader, name string) error {
	return m.Client.ImageLoadReader(ctx, &faultAfter{r: r, n: faultPayload / 2, fault: func() {
		m.half.Done()
		select {
		case <-m.both:
		case <-time.After(time.Minute):
		}
	}}, name)
}
