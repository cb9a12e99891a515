package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
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
	// Fast heartbeats and retries keep the tests short; nothing asserts a
	// duration.
	heartbeatInterval = 20 * time.Millisecond
	retryPause = func(int) time.Duration { return 0 }
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

// TestRegisterRecoversALostAnswer drops Core's enrollment answer: within
// the run, and across runs (the token is used by then), the node asks the
// identity route and finishes under the identity it wrote first, with one
// enrollment.
func TestRegisterRecoversALostAnswer(t *testing.T) {
	t.Run("retry", func(t *testing.T) {
		e := newEnv(t)
		e.s.Core.DropNextEnrollResponses(1)
		code, stdout, stderr := e.register(t, e.tokenFile(t))
		if code != 0 || !strings.Contains(stdout, e.identity(t).Identity.NodeID) {
			t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
		}
		if n := e.s.Core.Enrollments(); n != 1 {
			t.Fatalf("%d enrollments", n)
		}
	})
	t.Run("rerun", func(t *testing.T) {
		e := newEnv(t)
		defer func(n int) { enrollAttempts = n }(enrollAttempts)
		enrollAttempts = 1
		e.s.Core.DropNextEnrollResponses(1)
		tok := e.tokenFile(t)
		if code, _, stderr := e.register(t, tok); code != exitError {
			t.Fatalf("first run: exit %d %s", code, stderr)
		}
		first := e.identity(t) // written before the enrollment
		code, stdout, stderr := e.register(t, tok)
		if code != 0 || !strings.Contains(stdout, first.Identity.NodeID) {
			t.Fatalf("rerun: exit %d stdout %q stderr %q", code, stdout, stderr)
		}
		if again := e.identity(t); again.Credential != first.Credential || again.Identity.NodeID != first.Identity.NodeID {
			t.Fatal("the rerun changed the identity")
		}
		if n := e.s.Core.Enrollments(); n != 1 {
			t.Fatalf("%d enrollments", n)
		}
	})
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
		if code != exitRejected || stdout != "" || !strings.Contains(stderr, "node enrollment rejected (HTTP 401 invalid_node_credential)\n") {
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
