package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/nodeproto"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
)

// TestRunSpeaksToAPlatformCore puts the node in front of a fake Core that
// speaks as the platform's hub.go does, frame by frame: the hello carries
// exactly the platform's fields, each heartbeat names the welcome's
// connection and epoch and is answered by a heartbeat_ack, Core's request
// is answered on the same connection, and a heartbeat_ack of another
// owner epoch stops the node.
func TestRunSpeaksToAPlatformCore(t *testing.T) {
	e := newEnv(t)
	conn, epoch := uuid.NewString(), uint64(7)
	result := make(chan string, 1)
	var id *noderoot.NodeIdentity
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+id.Credential {
			w.WriteHeader(401)
			return
		}
		if r.URL.Path == "/api/v1/sandbox-node/identity" {
			i := id.Identity
			json.NewEncoder(w).Encode(enrollment{MaxActive: 2, MaxRetained: 2, SpecificationDigest: i.SpecificationDigest, DeploymentGeneration: i.DeploymentGeneration,
				NodeID: i.NodeID, InstallationID: i.InstallationID, Provider: i.Provider, Connected: false})
			return
		}
		ws, err := nodeproto.Accept(w, r)
		if err != nil {
			result <- err.Error()
			return
		}
		defer ws.Close(nodeproto.CloseNormal, "")
		result <- platformCore(ws, id, conn, epoch)
	}))
	defer srv.Close()
	e.writeConfig(t, srv.URL)
	cfg, err := readConfig(e.config)
	if err != nil {
		t.Fatal(err)
	}
	id = newIdentity(cfg, registerFlags{coreURL: srv.URL}, "")
	if err := os.MkdirAll(e.state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeIdentity(e.state, id); err != nil {
		t.Fatal(err)
	}
	n := e.run(t)
	if got := <-result; got != "" {
		t.Fatal(got)
	}
	if code := <-n.done; code != exitError || !strings.Contains(n.log.String(), "does not belong to this node's connection") {
		t.Fatalf("run exit %d: %s", code, n.log.String())
	}
	n.done <- code0
	if kept := e.identity(t); kept.OwnerEpoch != epoch || kept.Identity.MaxActive != 2 {
		t.Fatalf("identity.json after the connection: epoch %d capacity %d", kept.OwnerEpoch, kept.Identity.MaxActive)
	}
}

// platformCore plays Core's side; it returns what went wrong, "" when the
// node behaved.
func platformCore(ws *nodeproto.Conn, id *noderoot.NodeIdentity, conn string, epoch uint64) string {
	read := func(typ string) (map[string]json.RawMessage, *nodeproto.Frame, string) {
		ws.SetReadDeadline(time.Now().Add(time.Minute))
		msg, err := ws.ReadMessage()
		if err != nil {
			return nil, nil, err.Error()
		}
		f, err := nodeproto.Decode(msg)
		if err != nil || f.Type != typ {
			return nil, nil, "expected " + typ + ": " + string(msg)
		}
		var raw map[string]json.RawMessage
		json.Unmarshal(msg, &raw)
		return raw, f, ""
	}
	keys := func(raw json.RawMessage) string {
		var m map[string]json.RawMessage
		json.Unmarshal(raw, &m)
		var k []string
		for name := range m {
			k = append(k, name)
		}
		slices.Sort(k)
		return strings.Join(k, " ")
	}
	raw, hello, bad := read(nodeproto.TypeHello)
	if bad != "" {
		return bad
	}
	if got := keys(raw["identity"]); got != "backend_fingerprint deployment_generation installation_id max_active max_retained node_id provider specification_digest" {
		return "hello identity fields: " + got
	}
	// The platform's required health fields, and on this host the
	// optional metrics it knows.
	got := " " + keys(raw["health"]) + " "
	for _, k := range strings.Fields("provider_ready observed_at active_operations cpu_utilization total_memory_bytes effective_cpu_cores cpu_count available_memory_bytes available_disk_bytes") {
		if !strings.Contains(got, " "+k+" ") {
			return "hello health fields:" + got + "lack " + k
		}
	}
	if hello.Identity.NodeID != id.Identity.NodeID || hello.Identity.BackendFingerprint != id.Identity.BackendFingerprint || hello.GenerationManagement {
		return "hello identity: " + string(raw["identity"])
	}
	if err := ws.Send(nodeproto.Frame{Type: nodeproto.TypeWelcome, ConnectionID: conn, OwnerEpoch: epoch}); err != nil {
		return err.Error()
	}
	_, hb, bad := read(nodeproto.TypeHeartbeat)
	if bad != "" {
		return bad
	}
	if hb.ConnectionID != conn || hb.OwnerEpoch != epoch || hb.Health.Generations != nil {
		return "heartbeat of another connection"
	}
	if err := ws.Send(nodeproto.Frame{Type: nodeproto.TypeHeartbeatAck, ConnectionID: conn, OwnerEpoch: epoch}); err != nil {
		return err.Error()
	}
	q := &nodeproto.Request{DeploymentGeneration: 1, ID: uuid.NewString(), Sequence: 1, ConnectionID: conn, OwnerEpoch: epoch, Operation: "info", TimeoutMillis: 1000,
		Reference: json.RawMessage(`{}`)}
	if err := ws.Send(nodeproto.Frame{Type: nodeproto.TypeRequest, Request: q}); err != nil {
		return err.Error()
	}
	for {
		_, f, bad := read(nodeproto.TypeResponse)
		if f == nil && strings.Contains(bad, `"type":"heartbeat"`) {
			continue // a heartbeat between
		}
		if bad != "" {
			return bad
		}
		if f.Response.ID != q.ID || f.Response.ConnectionID != conn || f.Response.ErrorCode != "unconfirmed" {
			return "response " + f.Response.ID
		}
		break
	}
	if err := ws.Send(nodeproto.Frame{Type: nodeproto.TypeHeartbeatAck, ConnectionID: conn, OwnerEpoch: epoch + 1}); err != nil {
		return err.Error()
	}
	return ""
}
