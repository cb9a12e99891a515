package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/devcore"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
)

func TestMain(m *testing.M) {
	// Fast heartbeats keep the tests short; nothing asserts a duration.
	heartbeatInterval = 20 * time.Millisecond
	os.Exit(m.Run())
}

// env is a development Core, a fake Docker Engine holding the Runtime
// image, and a node root with provider.json.
type env struct {
	s      *devcore.Server
	engine *dockertest.Engine
	root   string
	config string
	state  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	s, err := devcore.Start(devcore.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	e := &env{s: s, engine: dockertest.Start(t), root: t.TempDir()}
	e.engine.AddImage(dockertest.Image{ID: s.Fixture.Image.ConfigDigest, OS: "linux", Architecture: "amd64"})
	e.config = filepath.Join(e.root, "provider.json")
	e.state = filepath.Join(e.root, "state", "node")
	e.writeConfig(t, s.URL)
	return e
}

// writeConfig writes the node's base provider.json for Core at origin.
func (e *env) writeConfig(t *testing.T, origin string) {
	t.Helper()
	spec, err := e.s.Fixture.Specification(e.s.Core.Provider())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := provider.Base(provider.BaseInput{InstallationID: ident.InstallationID(e.s.Core.InstallationID()), CoreOrigin: origin, Generation: 1,
		Specification: spec, Root: e.root, Image: e.s.Fixture.Image.ConfigDigest})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Docker.Host = e.engine.Host
	data, err := cfg.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.config, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// admin calls an admin route and decodes the answer.
func (e *env) admin(t *testing.T, method, path string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, e.s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.s.Core.AdminKey())
	resp, err := e.s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode < 300 {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode
}

func (e *env) tokenFile(t *testing.T) string {
	t.Helper()
	var tr devcore.TokenResponse
	if st := e.admin(t, "POST", "/core/v1/sandbox/enrollment-tokens", &tr); st != 201 {
		t.Fatalf("token: HTTP %d", st)
	}
	f := filepath.Join(t.TempDir(), ".enrollment-token")
	if err := os.WriteFile(f, []byte(tr.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func (e *env) register(t *testing.T, tokenFile string, extra ...string) (int, string, string) {
	t.Helper()
	return e.registerAt(t, e.s.URL, tokenFile, extra...)
}

func (e *env) registerAt(t *testing.T, origin, tokenFile string, extra ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args := append([]string{"register", "--config", e.config, "--state-dir", e.state, "--core-url", origin,
		"--name", "test-host", "--enrollment-token-file", tokenFile, "--core-ca", e.s.CA.CertPath}, extra...)
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func (e *env) identity(t *testing.T) *noderoot.NodeIdentity {
	t.Helper()
	id, err := readIdentity(e.state)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// node is a running `oac-node-dev run`.
type runningNode struct {
	cancel context.CancelFunc
	done   chan int
	log    *testhost.Buffer
}

func (e *env) run(t *testing.T) *runningNode {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	n := &runningNode{cancel: cancel, done: make(chan int, 1), log: &testhost.Buffer{}}
	go func() {
		n.done <- run(ctx, []string{"run", "--config", e.config, "--state-dir", e.state}, io.Discard, n.log)
	}()
	t.Cleanup(func() {
		cancel()
		<-n.done
	})
	return n
}

// waitNode polls Core's view of the node until ok holds for it.
func (e *env) waitNode(t *testing.T, nodeID string, ok func(devcore.NodeView) bool) devcore.NodeView {
	t.Helper()
	// The deadline only turns a hang into a failure with a reason.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		var v devcore.NodeView
		if st := e.admin(t, "GET", "/core/v1/sandbox/nodes/"+nodeID, &v); st == 200 && ok(v) {
			return v
		} else if time.Now().After(deadline) {
			t.Fatalf("Core's view of the node never got there: HTTP %d %+v", st, v)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProtocolVersionAndUsage(t *testing.T) {
	var out, errw bytes.Buffer
	if code := run(context.Background(), []string{"protocol-version"}, &out, &errw); code != 0 || out.String() != "5\n" {
		t.Fatalf("protocol-version: %d %q", code, out.String())
	}
	for _, args := range [][]string{{}, {"bogus"}, {"register", "--config", "relative"}, {"run"}} {
		errw.Reset()
		if code := run(context.Background(), args, &out, &errw); code != exitUsage || !strings.Contains(errw.String(), "usage: oac-node-dev") {
			t.Errorf("%q: exit %d stderr %q", args, code, errw.String())
		}
	}
}

func TestRegisterEnrollsAndPrintsOneLine(t *testing.T) {
	e := newEnv(t)
	code, stdout, stderr := e.register(t, e.tokenFile(t))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	id := e.identity(t)
	var line enrollment
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&line); err != nil || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("stdout %q: %v", stdout, err)
	}
	if line.NodeID != id.Identity.NodeID || line.InstallationID.String() != e.s.Core.InstallationID() || line.DeploymentGeneration != 1 || line.MaxActive != devcore.DefaultMaxActive {
		t.Fatalf("line %+v identity %+v", line, id.Identity)
	}
	if id.CoreURL != e.s.URL || id.CoreCA != e.s.CA.CertPath || id.CoreCASHA256 == "" {
		t.Fatalf("identity %+v", id)
	}
	if st, err := os.Stat(filepath.Join(e.state, layout.IdentityFileName)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("identity.json: %v %v", st, err)
	}
	if n := e.s.Core.Enrollments(); n != 1 {
		t.Fatalf("%d enrollments", n)
	}
	entries, _ := os.ReadDir(e.state)
	for _, en := range entries {
		if en.Name() != layout.IdentityFileName && en.Name() != lockName {
			t.Errorf("left in the state directory: %s", en.Name())
		}
	}
}

// TestRegisterRecoversALostAnswer drops Core's enrollment answer: the run
// enrolls once and fails, saying to retry with the same state directory;
// the rerun asks the identity route with the credential it wrote first and
// finishes under that identity, with one enrollment.
func TestRegisterRecoversALostAnswer(t *testing.T) {
	e := newEnv(t)
	e.s.Core.DropNextEnrollResponses(1)
	tok := e.tokenFile(t)
	if code, _, stderr := e.register(t, tok); code != exitError || !strings.Contains(stderr, "enrollment response unconfirmed; retry with the same state directory") {
		t.Fatalf("first run: exit %d %s", code, stderr)
	}
	first := e.identity(t) // written before the enrollment
	if first.Identity.MaxActive != 0 || first.Identity.MaxRetained != 0 {
		t.Fatalf("capacity before Core approved one: %d/%d", first.Identity.MaxActive, first.Identity.MaxRetained)
	}
	code, stdout, stderr := e.register(t, tok)
	if code != 0 || !strings.Contains(stdout, first.Identity.NodeID) {
		t.Fatalf("rerun: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	again := e.identity(t)
	if again.Credential != first.Credential || again.Identity.NodeID != first.Identity.NodeID || again.Identity.MaxActive != devcore.DefaultMaxActive {
		t.Fatal("the rerun changed the identity or kept no capacity")
	}
	if n := e.s.Core.Enrollments(); n != 1 {
		t.Fatalf("%d enrollments", n)
	}
}

// fakeCore answers the identity route with identity (status 401 when
// nil) and the enrollment with enroll, and records each request: its
// route and whether identity.json existed with capacity 0/0 when it came.
type fakeCore struct {
	url    string
	calls  []string
	enroll any
}

func (e *env) fakeCore(t *testing.T, enroll any) *fakeCore {
	t.Helper()
	f := &fakeCore{enroll: enroll}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := r.Method + " " + r.URL.Path
		if id, err := readIdentity(e.state); err == nil && id.Identity.MaxActive == 0 && id.Identity.MaxRetained == 0 {
			call += " (identity 0/0)"
		}
		f.calls = append(f.calls, call)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/sandbox-node/enroll":
			w.WriteHeader(201)
			json.NewEncoder(w).Encode(f.enroll)
		default:
			w.WriteHeader(401)
			io.WriteString(w, `{"error":{"code":"invalid_node_credential","message":"no"}}`)
		}
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	e.writeConfig(t, srv.URL)
	return f
}

// TestRegisterFollowsThePlatformsOrder: identity.json (capacity 0/0) is
// written before Core hears of the node, the configuration is never read
// with the token, the identity route is asked before the one enrollment,
// and a capacity outside 1 <= max_active <= max_retained <= 1000000 is
// refused.
func TestRegisterFollowsThePlatformsOrder(t *testing.T) {
	for _, tc := range []struct {
		name           string
		active, retain int64
		ok             bool
	}{{"valid", 2, 4, true}, {"max_active 0", 0, 4, false}, {"retained below active", 3, 2, false}, {"over a million", 1, 1000001, false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			tok := e.tokenFile(t)
			id := func() *noderoot.NodeIdentity { id, _ := readIdentity(e.state); return id }
			// The answer names the node the register run wrote.
			f := e.fakeCore(t, lazyEnrollment{id: id, active: tc.active, retain: tc.retain})
			code, stdout, stderr := e.registerAt(t, f.url, tok)
			want := []string{"GET /api/v1/sandbox-node/identity (identity 0/0)", "POST /api/v1/sandbox-node/enroll (identity 0/0)"}
			if strings.Join(f.calls, "|") != strings.Join(want, "|") {
				t.Fatalf("Core saw %q, want %q", f.calls, want)
			}
			got := e.identity(t).Identity
			if tc.ok {
				if code != 0 || got.MaxActive != tc.active || got.MaxRetained != tc.retain || !strings.Contains(stdout, `"max_active":2`) {
					t.Fatalf("exit %d stdout %q stderr %q identity %+v", code, stdout, stderr, got)
				}
				return
			}
			if code != exitError || stdout != "" || !strings.Contains(stderr, "invalid node capacity") || got.MaxActive != 0 || got.MaxRetained != 0 {
				t.Fatalf("exit %d stdout %q stderr %q identity %+v", code, stdout, stderr, got)
			}
		})
	}
}

// lazyEnrollment is Core's enrollment answer for the node identity.json
// names when the answer is written.
type lazyEnrollment struct {
	id             func() *noderoot.NodeIdentity
	active, retain int64
}

func (l lazyEnrollment) MarshalJSON() ([]byte, error) {
	i := l.id().Identity
	return json.Marshal(map[string]any{"max_active": l.active, "max_retained": l.retain, "deployment_generation": i.DeploymentGeneration,
		"node_id": i.NodeID, "installation_id": i.InstallationID, "provider": i.Provider, "specification_digest": i.SpecificationDigest})
}

// TestRegisterStopsOnAFailingProbe: a provider that is not ready stops
// the registration after identity.json is written and before Core hears
// of the node.
func TestRegisterStopsOnAFailingProbe(t *testing.T) {
	e := newEnv(t)
	tok := e.tokenFile(t)
	e.engine.Fail("GET /images/", http.StatusNotFound)
	code, stdout, stderr := e.register(t, tok)
	if code != exitError || stdout != "" || !strings.Contains(stderr, "local provider readiness check failed (runtime_image_unavailable)") {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	if id := e.identity(t); id.Identity.MaxActive != 0 || e.s.Core.Enrollments() != 0 {
		t.Fatalf("identity %+v, %d enrollments", id.Identity, e.s.Core.Enrollments())
	}
}

func TestRegisterRejections(t *testing.T) {
	t.Run("used token", func(t *testing.T) {
		e := newEnv(t)
		tok := e.tokenFile(t)
		if code, _, stderr := e.register(t, tok); code != 0 {
			t.Fatal(stderr)
		}
		os.RemoveAll(e.state)
		code, stdout, stderr := e.register(t, tok)
		if code != exitRejected || stdout != "" || !strings.Contains(stderr, "node enrollment rejected (HTTP 401 invalid_node_credential): sandbox node authentication rejected\n") {
			t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
		}
	})
	t.Run("address mismatch", func(t *testing.T) {
		e := newEnv(t)
		other := strings.Replace(e.s.URL, "127.0.0.1", "localhost", 1)
		e.writeConfig(t, other)
		tok := e.tokenFile(t)
		code, _, stderr := e.registerAt(t, other, tok)
		if code != exitError || !strings.Contains(stderr, "node enrollment rejected (HTTP 409 sandbox_node_address_mismatch)\n") {
			t.Fatalf("exit %d stderr %q", code, stderr)
		}
		// The token stays unused.
		os.RemoveAll(e.state)
		e.writeConfig(t, e.s.URL)
		if code, _, stderr := e.register(t, tok); code != 0 {
			t.Fatalf("the token was used: exit %d %s", code, stderr)
		}
	})
	t.Run("token file not private", func(t *testing.T) {
		e := newEnv(t)
		tok := e.tokenFile(t)
		os.Chmod(tok, 0o644)
		if code, _, stderr := e.register(t, tok); code != exitError || !strings.Contains(stderr, "mode 0600") {
			t.Fatalf("exit %d stderr %q", code, stderr)
		}
	})
}

func TestRunReportsReadinessAndDiagnostics(t *testing.T) {
	e := newEnv(t)
	if code, _, stderr := e.register(t, e.tokenFile(t)); code != 0 {
		t.Fatal(stderr)
	}
	id := e.identity(t).Identity.NodeID
	n := e.run(t)
	e.waitNode(t, id, func(v devcore.NodeView) bool { return v.Online && v.ProviderReady })
	good := dockertest.Info{NCPU: 4, MemTotal: 8 << 30, MemoryLimit: true, CPUCfsQuota: true, CgroupVersion: "2", ServerVersion: "20.10.24"}
	for _, tc := range []struct {
		name  string
		setup func()
		want  string
	}{
		{"no memory limit", func() { i := good; i.MemoryLimit = false; e.engine.SetInfo(i) }, diagDockerLimitsUnsupported},
		{"too small", func() { i := good; i.MemTotal = 256 << 20; e.engine.SetInfo(i) }, diagCapacityInsufficient},
		{"image gone", func() {
			e.engine.SetInfo(good)
			e.engine.Fail("GET /images/", http.StatusNotFound)
		}, diagRuntimeImageUnavailable},
		{"daemon stopped", func() { e.engine.Stop() }, diagDockerUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			v := e.waitNode(t, id, func(v devcore.NodeView) bool { return v.Diagnostic == tc.want })
			if v.ProviderReady {
				t.Fatalf("ready with diagnostic %s", v.Diagnostic)
			}
		})
	}
	select {
	case code := <-n.done:
		t.Fatalf("run ended with %d: %s", code, n.log.String())
	default:
	}
}

func TestRunExits78AfterRemoval(t *testing.T) {
	e := newEnv(t)
	if code, _, stderr := e.register(t, e.tokenFile(t)); code != 0 {
		t.Fatal(stderr)
	}
	id := e.identity(t).Identity.NodeID
	n := e.run(t)
	e.waitNode(t, id, func(v devcore.NodeView) bool { return v.Online })
	if st := e.admin(t, "DELETE", "/core/v1/sandbox/nodes/"+id, nil); st != 204 {
		t.Fatalf("remove: HTTP %d", st)
	}
	if code := <-n.done; code != exitRejected {
		t.Fatalf("run exit %d, want 78: %s", code, n.log.String())
	}
	n.done <- code0 // for the cleanup
}

const code0 = 0

func TestOneProcessPerStateDirectory(t *testing.T) {
	dir := t.TempDir()
	l, err := lockState(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if _, err := lockState(dir); err == nil || !strings.Contains(err.Error(), "another node process") {
		t.Fatalf("second lock: %v", err)
	}
}

// TestRunRefreshesTheIdentityFirst: run asks the identity route with the
// credential before it connects; a node Core removed meanwhile exits 78
// without connecting.
func TestRunRefreshesTheIdentityFirst(t *testing.T) {
	e := newEnv(t)
	if code, _, stderr := e.register(t, e.tokenFile(t)); code != 0 {
		t.Fatal(stderr)
	}
	id := e.identity(t).Identity.NodeID
	if st := e.admin(t, "DELETE", "/core/v1/sandbox/nodes/"+id, nil); st != 204 {
		t.Fatalf("remove: HTTP %d", st)
	}
	n := e.run(t)
	if code := <-n.done; code != exitRejected || !strings.Contains(n.log.String(), "HTTP 401") {
		t.Fatalf("run exit %d, want 78: %s", code, n.log.String())
	}
	n.done <- code0
}

// TestRunKeepsCoresOwnerEpoch: the welcome's owner epoch is retained in
// identity.json; a welcome below the retained one stops the node (the
// platform's node refuses it as another owner's) instead of reconnecting.
func TestRunKeepsCoresOwnerEpoch(t *testing.T) {
	e := newEnv(t)
	if code, _, stderr := e.register(t, e.tokenFile(t)); code != 0 {
		t.Fatal(stderr)
	}
	id := e.identity(t)
	n := e.run(t)
	e.waitNode(t, id.Identity.NodeID, func(v devcore.NodeView) bool { return v.Online && v.ProviderReady })
	n.cancel()
	if code := <-n.done; code != 0 {
		t.Fatalf("run exit %d: %s", code, n.log.String())
	}
	n.done <- code0
	kept := e.identity(t)
	if kept.OwnerEpoch < 1 {
		t.Fatalf("owner epoch %d retained", kept.OwnerEpoch)
	}
	kept.OwnerEpoch += 100
	if err := writeIdentity(e.state, kept); err != nil {
		t.Fatal(err)
	}
	n = e.run(t)
	if code := <-n.done; code != exitError || !strings.Contains(n.log.String(), "owner epoch") {
		t.Fatalf("run exit %d: %s", code, n.log.String())
	}
	n.done <- code0
}
