package devcore

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/nodeproto"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// call sends a JSON request with a bearer secret and decodes the answer
// into out (when not nil); it returns the status and the error code.
func call(t *testing.T, s *Server, method, path, secret string, body any, out any, header ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode >= 400 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
			t.Fatalf("%s %s: HTTP %d body %q is not {\"error\":{\"code\",\"message\"}}", method, path, resp.StatusCode, data)
		}
		return resp.StatusCode, e.Error.Code
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v in %q", method, path, err, data)
		}
	}
	return resp.StatusCode, ""
}

func newToken(t *testing.T, s *Server) string {
	t.Helper()
	var tr TokenResponse
	if st, code := call(t, s, "POST", "/core/v1/sandbox/enrollment-tokens", s.Core.AdminKey(), map[string]int{"max_active": 2}, &tr); st != 201 {
		t.Fatalf("token: HTTP %d %s", st, code)
	}
	return tr.Token
}

// enrollment is a node's enrollment request for the target.
func enrollment(t *testing.T, s *Server) EnrollRequest {
	t.Helper()
	var cfg Configuration
	tok := newToken(t, s)
	if st, code := call(t, s, "GET", "/api/v1/sandbox-node/configuration", tok, nil, &cfg); st != 200 {
		t.Fatalf("configuration: HTTP %d %s", st, code)
	}
	return EnrollRequest{
		NodeID: uuid.NewString(), Credential: newSecret(), Name: "host-1", Provider: cfg.Provider,
		BackendFingerprint: strings.Repeat("ab", 32), DeploymentGeneration: cfg.Generation,
		SpecificationDigest: cfg.SpecificationDigest, CoreURL: s.URL,
	}
}

func enroll(t *testing.T, s *Server) EnrollRequest {
	t.Helper()
	req := enrollment(t, s)
	if st, code := call(t, s, "POST", "/api/v1/sandbox-node/enroll", newToken(t, s), req, nil); st != 201 {
		t.Fatalf("enroll: HTTP %d %s", st, code)
	}
	return req
}

func coreClient(t *testing.T, s *Server, req EnrollRequest) *core.Client {
	id := &noderoot.NodeIdentity{Credential: req.Credential, CoreURL: s.URL}
	id.Identity.NodeID = req.NodeID
	c, err := noderoot.NewCoreClient(id, trust.Only(s.CA.Pool()), proxy.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAdminRoutesNeedTheAdminKey(t *testing.T) {
	data := t.TempDir()
	s := start(t, Config{DataDir: data})
	key, err := os.ReadFile(filepath.Join(data, AdminKeyFileName))
	if err != nil || strings.TrimSpace(string(key)) != s.Core.AdminKey() {
		t.Fatalf("admin key file: %q %v", key, err)
	}
	if st, _ := os.Stat(filepath.Join(data, AdminKeyFileName)); st.Mode().Perm() != 0o600 {
		t.Fatalf("admin key mode %v", st.Mode())
	}
	for _, r := range []struct{ method, path string }{
		{"POST", "/core/v1/sandbox/enrollment-tokens"},
		{"GET", "/core/v1/sandbox/nodes"},
		{"DELETE", "/core/v1/sandbox/nodes/" + uuid.NewString()},
		{"POST", "/core/v1/sandbox/deployment/generations"},
	} {
		for _, secret := range []string{"", "wrong", newSecret()} {
			if st, code := call(t, s, r.method, r.path, secret, nil, nil); st != 401 || code != CodeInvalidAdminKey {
				t.Errorf("%s %s with %q: HTTP %d %s", r.method, r.path, secret, st, code)
			}
		}
	}
}

// TestConfigurationIsValidForTheRepositoryClient reads the configuration
// with a token and with a node credential, and has the installer's own
// parser and the generation helper's Core client accept it.
func TestConfigurationIsValidForTheRepositoryClient(t *testing.T) {
	for _, provider := range []string{release.ProviderDocker, release.ProviderMicrosandbox} {
		t.Run(provider, func(t *testing.T) {
			s := start(t, Config{DataDir: t.TempDir(), Provider: provider})
			tok := newToken(t, s)
			req, err := http.NewRequest("GET", s.URL+"/api/v1/sandbox-node/configuration", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tok)
			for range 2 { // a read never consumes the token
				resp, body := get(t, s.Client(), req.URL.String(), "Authorization", "Bearer "+tok)
				if resp.StatusCode != 200 {
					t.Fatalf("HTTP %d %s", resp.StatusCode, body)
				}
				cfg, err := core.ParseConfiguration(body)
				if err != nil {
					t.Fatal(err)
				}
				if cfg.InstallationID.String() != s.Core.InstallationID() || cfg.Provider != provider || cfg.CoreURL != s.URL || cfg.Generation != 1 || cfg.MaxActive != 2 {
					t.Fatalf("configuration %+v", cfg)
				}
				if err := release.MatchRelease(cfg.Specification, s.Fixture.Manifest); err != nil {
					t.Fatalf("specification does not match the active release: %v", err)
				}
			}
			req2 := enroll(t, s)
			cfg, err := coreClient(t, s, req2).Configuration(context.Background(), 1)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.SpecificationDigest != req2.SpecificationDigest {
				t.Fatalf("digest %s, want %s", cfg.SpecificationDigest, req2.SpecificationDigest)
			}
		})
	}
}

func TestEnrollErrors(t *testing.T) {
	s := start(t, Config{DataDir: t.TempDir()})
	taken := enroll(t, s)
	for _, tc := range []struct {
		name   string
		token  func() string
		edit   func(*EnrollRequest)
		status int
		code   string
		unused bool // the token can still enroll afterwards
	}{
		{"no token", func() string { return "" }, nil, 401, CodeInvalidCredential, false},
		{"unknown token", func() string { return "oac_et_" + newSecret() }, nil, 401, CodeInvalidCredential, false},
		{"node credential as token", func() string { return taken.Credential }, nil, 401, CodeInvalidCredential, false},
		{"core url missing", nil, func(r *EnrollRequest) { r.CoreURL = "" }, 400, "invalid_request_error", true},
		{"node id not canonical", nil, func(r *EnrollRequest) { r.NodeID = strings.ToUpper(r.NodeID) }, 400, CodeInvalidRequest, true},
		{"short credential", nil, func(r *EnrollRequest) { r.Credential = "abc" }, 400, CodeInvalidRequest, true},
		{"credential with space", nil, func(r *EnrollRequest) { r.Credential = strings.Repeat("a", 20) + " " + strings.Repeat("b", 20) }, 400, CodeInvalidRequest, true},
		{"address mismatch", nil, func(r *EnrollRequest) { r.CoreURL = "https://core.example.com" }, 409, CodeAddressMismatch, true},
		{"node id taken", nil, func(r *EnrollRequest) { r.NodeID = taken.NodeID }, 409, CodeIdempotencyConflict, true},
		{"other generation", nil, func(r *EnrollRequest) { r.DeploymentGeneration = 2 }, 409, CodeSpecificationMismatch, true},
		{"other provider", nil, func(r *EnrollRequest) { r.Provider = release.ProviderMicrosandbox }, 409, CodeSpecificationMismatch, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := newToken(t, s)
			if tc.token != nil {
				tok = tc.token()
			}
			req := enrollment(t, s)
			if tc.edit != nil {
				tc.edit(&req)
			}
			if st, code := call(t, s, "POST", "/api/v1/sandbox-node/enroll", tok, req, nil); st != tc.status || code != tc.code {
				t.Fatalf("HTTP %d %s, want %d %s", st, code, tc.status, tc.code)
			}
			if tc.unused {
				if st, code := call(t, s, "POST", "/api/v1/sandbox-node/enroll", tok, enrollment(t, s), nil); st != 201 {
					t.Fatalf("the token was used: HTTP %d %s", st, code)
				}
			}
		})
	}
}

func TestTokenIsSingleUseAndExpires(t *testing.T) {
	s := start(t, Config{DataDir: t.TempDir()})
	tok := newToken(t, s)
	if st, code := call(t, s, "POST", "/api/v1/sandbox-node/enroll", tok, enrollment(t, s), nil); st != 201 {
		t.Fatalf("enroll: HTTP %d %s", st, code)
	}
	for _, p := range []struct{ method, path string }{{"POST", "/api/v1/sandbox-node/enroll"}, {"GET", "/api/v1/sandbox-node/configuration"}} {
		if st, code := call(t, s, p.method, p.path, tok, enrollment(t, s), nil); st != 401 || code != CodeInvalidCredential {
			t.Fatalf("used token on %s: HTTP %d %s", p.path, st, code)
		}
	}
	late := newToken(t, s)
	now := time.Now()
	s.Core.SetClock(func() time.Time { return now.Add(TokenLifetime - time.Second) })
	if st, _ := call(t, s, "GET", "/api/v1/sandbox-node/configuration", late, nil, nil); st != 200 {
		t.Fatalf("token refused before it expired: HTTP %d", st)
	}
	s.Core.SetClock(func() time.Time { return now.Add(TokenLifetime + time.Second) })
	if st, code := call(t, s, "POST", "/api/v1/sandbox-node/enroll", late, enrollment(t, s), nil); st != 401 || code != CodeInvalidCredential {
		t.Fatalf("expired token: HTTP %d %s", st, code)
	}
}

func TestLostEnrollResponseKeepsTheEnrollment(t *testing.T) {
	s := start(t, Config{DataDir: t.TempDir()})
	req := enrollment(t, s)
	s.Core.DropNextEnrollResponses(1)
	b, _ := json.Marshal(req)
	hr, _ := http.NewRequest("POST", s.URL+"/api/v1/sandbox-node/enroll", bytes.NewReader(b))
	hr.Header.Set("Authorization", "Bearer "+newToken(t, s))
	if resp, err := s.Client().Do(hr); err == nil {
		resp.Body.Close()
		t.Fatalf("the response arrived: HTTP %d", resp.StatusCode)
	}
	var id NodeIdentity
	if st, code := call(t, s, "GET", "/api/v1/sandbox-node/identity?node_id="+req.NodeID, req.Credential, nil, &id); st != 200 {
		t.Fatalf("identity after a lost response: HTTP %d %s", st, code)
	}
	if id.NodeID != req.NodeID || id.Connected || id.ProviderReady {
		t.Fatalf("identity %+v", id)
	}
}

// dial opens the node's connection and exchanges hello and welcome in
// the platform's node program's dialect.
func dial(t *testing.T, s *Server, req EnrollRequest, ready, managed bool) (*nodeproto.Conn, *nodeproto.Frame) {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + req.Credential}}
	ws, resp, err := nodeproto.DialURL(context.Background(), s.URL+"/api/v1/sandbox-node/connect?node_id="+req.NodeID, h, &tls.Config{RootCAs: s.CA.Pool()})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("connect: %v (HTTP %d)", err, status)
	}
	t.Cleanup(func() { ws.Close(nodeproto.CloseNormal, "") })
	if err := ws.Send(nodeproto.Frame{Type: nodeproto.TypeHello, Identity: helloIdentity(s, req), Health: health(ready, nil),
		GenerationManagement: managed}); err != nil {
		t.Fatal(err)
	}
	return ws, recv(t, ws, nodeproto.TypeWelcome)
}

func helloIdentity(s *Server, req EnrollRequest) *nodeproto.Identity {
	return &nodeproto.Identity{NodeID: req.NodeID, InstallationID: s.Core.InstallationID(), Provider: req.Provider, BackendFingerprint: req.BackendFingerprint,
		DeploymentGeneration: req.DeploymentGeneration, SpecificationDigest: req.SpecificationDigest, MaxActive: 1, MaxRetained: 1}
}

func health(ready bool, gens []nodeproto.Observation) *nodeproto.Health {
	return &nodeproto.Health{ProviderReady: ready, ObservedAt: time.Now().UTC(), Generations: gens}
}

// recv reads the next frame, which must be of type typ.
func recv(t *testing.T, ws *nodeproto.Conn, typ string) *nodeproto.Frame {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(time.Minute)) // a bound against a hang, not a timed assertion
	msg, err := ws.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	f, err := nodeproto.Decode(msg)
	if err != nil || f.Type != typ {
		t.Fatalf("expected %s: %v: %s", typ, err, msg)
	}
	return f
}

// heartbeat sends a heartbeat on the welcome's connection and returns
// Core's heartbeat_ack.
func heartbeat(t *testing.T, ws *nodeproto.Conn, welcome *nodeproto.Frame, h *nodeproto.Health) *nodeproto.Frame {
	t.Helper()
	if err := ws.Send(nodeproto.Frame{Type: nodeproto.TypeHeartbeat, ConnectionID: welcome.ConnectionID, OwnerEpoch: welcome.OwnerEpoch, Health: h}); err != nil {
		t.Fatal(err)
	}
	ack := recv(t, ws, nodeproto.TypeHeartbeatAck)
	if ack.ConnectionID != welcome.ConnectionID || ack.OwnerEpoch != welcome.OwnerEpoch {
		t.Fatalf("heartbeat_ack %+v for welcome %+v", ack, welcome)
	}
	return ack
}

func deployment(gen int64, digest string, serving int64) nodeproto.Deployment {
	return nodeproto.Deployment{Generation: gen, SpecificationDigest: digest, ServingGeneration: &serving}
}

func sameDeployment(d *nodeproto.Deployment, want nodeproto.Deployment) bool {
	return d != nil && d.Generation == want.Generation && d.SpecificationDigest == want.SpecificationDigest &&
		d.ServingGeneration != nil && *d.ServingGeneration == *want.ServingGeneration
}

func connectStatus(t *testing.T, s *Server, req EnrollRequest) int {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + req.Credential}}
	ws, resp, err := nodeproto.DialURL(context.Background(), s.URL+"/api/v1/sandbox-node/connect?node_id="+req.NodeID, h, &tls.Config{RootCAs: s.CA.Pool()})
	if err == nil {
		ws.Close(nodeproto.CloseNormal, "")
		return 101
	}
	if resp == nil {
		t.Fatal(err)
	}
	return resp.StatusCode
}

func TestConnectionGenerationsAndRemoval(t *testing.T) {
	s := start(t, Config{DataDir: t.TempDir()})
	req := enroll(t, s)
	ws, welcome := dial(t, s, req, true, true)
	if !sameDeployment(welcome.Deployment, deployment(1, req.SpecificationDigest, 1)) || welcome.Version != nodeproto.ProtocolVersion {
		t.Fatalf("welcome %+v", welcome)
	}
	if ack := heartbeat(t, ws, welcome, health(true, nil)); !sameDeployment(ack.Deployment, deployment(1, req.SpecificationDigest, 1)) {
		t.Fatalf("heartbeat_ack %+v", ack)
	}
	var id NodeIdentity
	call(t, s, "GET", "/api/v1/sandbox-node/identity?node_id="+req.NodeID, req.Credential, nil, &id)
	if !id.Connected || !id.ProviderReady {
		t.Fatalf("identity while connected %+v", id)
	}
	var view NodeView
	call(t, s, "GET", "/core/v1/sandbox/nodes/"+req.NodeID, s.Core.AdminKey(), nil, &view)
	if !view.Online || !view.ProviderReady || view.Diagnostic != "" {
		t.Fatalf("node view %+v", view)
	}
	if st := connectStatus(t, s, req); st != 409 {
		t.Fatalf("second connection: HTTP %d", st)
	}

	// A new Runtime release becomes generation 2; the node hears of it.
	var gv GenerationView
	if st, code := call(t, s, "POST", "/core/v1/sandbox/deployment/generations", s.Core.AdminKey(), nil, &gv); st != 201 {
		t.Fatalf("publish: HTTP %d %s", st, code)
	}
	// Core sends nothing unasked: the next heartbeat_ack carries the target.
	if ack := heartbeat(t, ws, welcome, health(true, []nodeproto.Observation{{Generation: 1, SpecificationDigest: req.SpecificationDigest, State: nodeproto.StateReady}})); !sameDeployment(ack.Deployment, deployment(2, gv.SpecificationDigest, 1)) {
		t.Fatalf("heartbeat_ack %+v, published %+v", ack, gv)
	}
	cfg2, err := coreClient(t, s, req).Configuration(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if cfg2.Specification.Runtime.SourceCommit == s.Fixture.SourceCommit || cfg2.SpecificationDigest != gv.SpecificationDigest {
		t.Fatalf("generation 2 runs %s", cfg2.Specification.Runtime.SourceCommit)
	}
	// Its release is published on the console.
	if resp, _ := get(t, s.Client(), s.URL+"/node-install/releases/"+gv.SourceCommit+"/manifest.json"); resp.StatusCode != 200 {
		t.Fatalf("generation 2's manifest: HTTP %d", resp.StatusCode)
	}

	// Generation 1 is served until the node reports 2 ready.
	if st, code := call(t, s, "POST", "/core/v1/sandbox/deployment/generations/1/drop", s.Core.AdminKey(), nil, nil); st != 409 {
		t.Fatalf("drop of a served generation: HTTP %d %s", st, code)
	}
	both := []nodeproto.Observation{{Generation: 2, SpecificationDigest: gv.SpecificationDigest, State: nodeproto.StateReady},
		{Generation: 1, SpecificationDigest: req.SpecificationDigest, State: nodeproto.StateReady}}
	if ack := heartbeat(t, ws, welcome, health(true, both)); !sameDeployment(ack.Deployment, deployment(2, gv.SpecificationDigest, 2)) {
		t.Fatalf("heartbeat_ack after generation 2 is ready %+v", ack)
	}
	call(t, s, "GET", "/core/v1/sandbox/nodes/"+req.NodeID, s.Core.AdminKey(), nil, &view)
	if view.Rollout.ServingGeneration != 2 {
		t.Fatalf("serving %d", view.Rollout.ServingGeneration)
	}
	// Before the drop, Core keeps both generations the node retains.
	refs := []nodeproto.Reference{{Generation: 1, SpecificationDigest: req.SpecificationDigest}, {Generation: 2, SpecificationDigest: gv.SpecificationDigest}}
	if got := retention(t, ws, welcome, 1, refs); !got[0].Keep || !got[1].Keep {
		t.Fatalf("retentions before the drop %+v", got)
	}
	if st, code := call(t, s, "POST", "/core/v1/sandbox/deployment/generations/1/drop", s.Core.AdminKey(), nil, nil); st != 200 {
		t.Fatalf("drop: HTTP %d %s", st, code)
	}
	// The drop grant reaches the node in the answer to its next retention.
	if got := retention(t, ws, welcome, 2, refs); got[0].Keep || !got[1].Keep {
		t.Fatalf("retentions after the drop %+v", got)
	}
	if _, err := coreClient(t, s, req).Configuration(context.Background(), 1); !errors.Is(err, core.ErrRejected) {
		t.Fatalf("configuration of a dropped generation: %v", err)
	}
	if st, _ := call(t, s, "POST", "/core/v1/sandbox/deployment/generations/2/drop", s.Core.AdminKey(), nil, nil); st != 409 {
		t.Fatalf("drop of the target: HTTP %d", st)
	}

	// Removal closes the connection and refuses the credential everywhere.
	if st, code := call(t, s, "DELETE", "/core/v1/sandbox/nodes/"+req.NodeID, s.Core.AdminKey(), nil, nil); st != 204 {
		t.Fatalf("remove: HTTP %d %s", st, code)
	}
	ws.SetReadDeadline(time.Now().Add(time.Minute))
	var ce *nodeproto.CloseError
	if _, err := ws.ReadMessage(); !errors.As(err, &ce) || ce.Code != nodeproto.CloseRemoved {
		t.Fatalf("after removal the connection read %v", err)
	}
	for _, p := range []string{"/api/v1/sandbox-node/identity?node_id=" + req.NodeID, "/api/v1/sandbox-node/configuration"} {
		if st, code := call(t, s, "GET", p, req.Credential, nil, nil, "X-OAC-Node-ID", req.NodeID); st != 401 || code != CodeInvalidCredential {
			t.Fatalf("%s after removal: HTTP %d %s", p, st, code)
		}
	}
	if st := connectStatus(t, s, req); st != 401 {
		t.Fatalf("connect after removal: HTTP %d", st)
	}
	if st, _ := call(t, s, "DELETE", "/core/v1/sandbox/nodes/"+req.NodeID, s.Core.AdminKey(), nil, nil); st != 404 {
		t.Fatalf("second removal: HTTP %d", st)
	}
}

// retention sends the node's references as retention number seq and
// returns Core's retentions, checked to answer them in order.
func retention(t *testing.T, ws *nodeproto.Conn, welcome *nodeproto.Frame, seq uint64, refs []nodeproto.Reference) []nodeproto.Retention {
	t.Helper()
	ctl := &nodeproto.Control{ID: uuid.NewString(), Sequence: seq, ConnectionID: welcome.ConnectionID, OwnerEpoch: welcome.OwnerEpoch, References: refs}
	if err := ws.Send(nodeproto.Frame{Type: nodeproto.TypeRetention, Control: ctl}); err != nil {
		t.Fatal(err)
	}
	ack := recv(t, ws, nodeproto.TypeRetentionAck)
	c := ack.Control
	if c.ID != ctl.ID || c.Sequence != seq || c.ConnectionID != welcome.ConnectionID || c.OwnerEpoch != welcome.OwnerEpoch || len(c.Retentions) != len(refs) || ack.Deployment == nil {
		t.Fatalf("retention_ack %+v for %+v", ack, ctl)
	}
	for i, r := range c.Retentions {
		if r.Generation != refs[i].Generation || r.SpecificationDigest != refs[i].SpecificationDigest {
			t.Fatalf("retention %d %+v answers %+v", i, r, refs[i])
		}
	}
	return c.Retentions
}

func TestIdentityErrors(t *testing.T) {
	s := start(t, Config{DataDir: t.TempDir()})
	req := enroll(t, s)
	for _, tc := range []struct {
		name, query, secret string
		status              int
		code                string
	}{
		{"no node id", "", req.Credential, 400, CodeInvalidRequest},
		{"no credential", "?node_id=" + req.NodeID, "", 401, CodeInvalidCredential},
		{"wrong credential", "?node_id=" + req.NodeID, newSecret(), 401, CodeInvalidCredential},
		{"unknown node", "?node_id=" + uuid.NewString(), req.Credential, 401, CodeInvalidCredential},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if st, code := call(t, s, "GET", "/api/v1/sandbox-node/identity"+tc.query, tc.secret, nil, nil); st != tc.status || code != tc.code {
				t.Fatalf("HTTP %d %s, want %d %s", st, code, tc.status, tc.code)
			}
		})
	}
}

// TestStateSurvivesRestart restarts the stand-in on its data directory:
// the installation, the admin key and the enrolled node remain; tokens do
// not.
func TestStateSurvivesRestart(t *testing.T) {
	data := t.TempDir()
	s, err := Start(Config{DataDir: data, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	req := enroll(t, s)
	tok := newToken(t, s)
	inst, key := s.Core.InstallationID(), s.Core.AdminKey()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := start(t, Config{DataDir: data})
	if s2.Core.InstallationID() != inst || s2.Core.AdminKey() != key {
		t.Fatal("installation or admin key changed")
	}
	// The public URL changed with the port: the stored node keeps its
	// credential all the same.
	var id NodeIdentity
	if st, code := call(t, s2, "GET", "/api/v1/sandbox-node/identity?node_id="+req.NodeID, req.Credential, nil, &id); st != 200 {
		t.Fatalf("identity after restart: HTTP %d %s", st, code)
	}
	if st, _ := call(t, s2, "GET", "/api/v1/sandbox-node/configuration", tok, nil, nil); st != 401 {
		t.Fatalf("token after restart: HTTP %d", st)
	}
	raw, err := os.ReadFile(filepath.Join(data, CoreStateFileName))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(req.Credential)) || bytes.Contains(raw, []byte(key)) {
		t.Fatal("the state file holds a secret")
	}
	fmt.Fprint(io.Discard, raw)
}

// TestConnectionRefusesOtherDialects: Core takes only the platform's
// hello (version 5, the platform's identity and health fields, the
// enrolled backend); our former dialect (protocol_version) and a hello
// naming another backend end the connection without a welcome. A node
// that does not manage generations gets no deployment, in the welcome or
// in a heartbeat_ack.
func TestConnectionRefusesOtherDialects(t *testing.T) {
	s := start(t, Config{DataDir: t.TempDir()})
	req := enroll(t, s)
	id := helloIdentity(s, req)
	hb, _ := json.Marshal(health(true, nil))
	idj, _ := json.Marshal(id)
	other := *id
	other.BackendFingerprint = strings.Repeat("cd", 32)
	otherj, _ := json.Marshal(other)
	for name, hello := range map[string]string{
		"protocol_version":   `{"type":"hello","protocol_version":5,"identity":` + string(idj) + `,"health":` + string(hb) + `}`,
		"version 4":          `{"version":4,"type":"hello","identity":` + string(idj) + `,"health":` + string(hb) + `}`,
		"another backend":    `{"version":5,"type":"hello","identity":` + string(otherj) + `,"health":` + string(hb) + `}`,
		"health without cpu": `{"version":5,"type":"hello","identity":` + string(idj) + `,"health":{"provider_ready":true,"observed_at":"2026-01-02T03:04:05Z","active_operations":0}}`,
	} {
		t.Run(name, func(t *testing.T) {
			h := http.Header{"Authorization": {"Bearer " + req.Credential}}
			ws, _, err := nodeproto.DialURL(context.Background(), s.URL+"/api/v1/sandbox-node/connect?node_id="+req.NodeID, h, &tls.Config{RootCAs: s.CA.Pool()})
			if err != nil {
				t.Fatal(err)
			}
			defer ws.Close(nodeproto.CloseNormal, "")
			if err := ws.WriteMessage([]byte(hello)); err != nil {
				t.Fatal(err)
			}
			ws.SetReadDeadline(time.Now().Add(time.Minute))
			var ce *nodeproto.CloseError
			if msg, err := ws.ReadMessage(); !errors.As(err, &ce) || ce.Code != nodeproto.ClosePolicyViolation {
				t.Fatalf("after the hello: %s %v", msg, err)
			}
		})
	}
	ws, welcome := dial(t, s, req, true, false)
	if welcome.Deployment != nil || welcome.Version != nodeproto.ProtocolVersion || !ident.CanonicalUUID(welcome.ConnectionID) || welcome.OwnerEpoch < 1 {
		t.Fatalf("welcome of a node without generations %+v", welcome)
	}
	if ack := heartbeat(t, ws, welcome, health(true, nil)); ack.Deployment != nil {
		t.Fatalf("heartbeat_ack %+v", ack)
	}
	// A heartbeat naming another connection ends this one.
	if err := ws.Send(nodeproto.Frame{Type: nodeproto.TypeHeartbeat, ConnectionID: uuid.NewString(), OwnerEpoch: welcome.OwnerEpoch, Health: health(true, nil)}); err != nil {
		t.Fatal(err)
	}
	ws.SetReadDeadline(time.Now().Add(time.Minute))
	if msg, err := ws.ReadMessage(); err == nil {
		t.Fatalf("answer to another connection's heartbeat: %s", msg)
	}
}
