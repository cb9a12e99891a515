package status

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
)

// TestNodeStatus reads the registration from the node root and asks a
// fake Core, for each registration state and each of Core's answers.
func TestNodeStatus(t *testing.T) {
	const (
		inst   = "0b6c1f0e-5d1a-4c8e-9a7b-3f2d1e0c9b8a"
		nodeID = "7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
		cred   = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
		digest = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	)
	var status int
	var answer map[string]any
	core := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+cred || r.URL.Query().Get("node_id") != nodeID {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(answer)
	}))
	defer core.Close()
	identity := func(installation string) []byte {
		b, _ := json.Marshal(map[string]any{
			"identity": map[string]any{"specification_digest": digest, "deployment_generation": 1, "node_id": nodeID,
				"installation_id": installation, "provider": "docker", "backend_fingerprint": digest, "max_active": 1, "max_retained": 1},
			"credential": cred, "core_url": "https://elsewhere.example", "owner_epoch": 1,
		})
		return b
	}
	ok := map[string]any{"node_id": nodeID, "installation_id": inst, "connected": true, "provider_ready": true}
	for _, tc := range []struct {
		name       string
		files      map[string][]byte
		status     int
		answer     map[string]any
		reg, state string
	}{
		{"never registered", nil, 0, nil, RegistrationNone, ""},
		{"registered.json without identity", map[string][]byte{"registered.json": []byte("{}")}, 0, nil, RegistrationInvalid, ""},
		{"identity of another installation", map[string][]byte{"state/node/identity.json": identity("1c5b3d7f-2e4a-4b6c-8d9e-0f1a2b3c4d5e")}, 0, nil, RegistrationInvalid, ""},
		{"pending, ready", map[string][]byte{"state/node/identity.json": identity(inst)}, 200, ok, RegistrationPending, CoreReady},
		{"registered, removed", map[string][]byte{"state/node/identity.json": identity(inst), "registered.json": []byte("{}")}, 401, nil, RegistrationDone, CoreRemoved},
		{"registered, not connected", map[string][]byte{"state/node/identity.json": identity(inst), "registered.json": []byte("{}")}, 200,
			map[string]any{"node_id": nodeID, "installation_id": inst, "connected": false}, RegistrationDone, CoreNotConnected},
		{"registered, provider not ready", map[string][]byte{"state/node/identity.json": identity(inst), "registered.json": []byte("{}")}, 200,
			map[string]any{"node_id": nodeID, "installation_id": inst, "connected": true, "diagnostic": "docker_unavailable"}, RegistrationDone, CoreProviderNotReady},
		{"another node's answer", map[string][]byte{"state/node/identity.json": identity(inst), "registered.json": []byte("{}")}, 200,
			map[string]any{"node_id": nodeID, "installation_id": "1c5b3d7f-2e4a-4b6c-8d9e-0f1a2b3c4d5e", "connected": true}, RegistrationDone, CoreAnswered},
		{"Core fails", map[string][]byte{"state/node/identity.json": identity(inst), "registered.json": []byte("{}")}, 503, nil, RegistrationDone, CoreAnswered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			root := layout.NodeRootIn(home, inst)
			for rel, data := range tc.files {
				p := filepath.Join(root, rel)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			os.MkdirAll(root, 0o700)
			status, answer = tc.status, tc.answer
			reg, view := nodeStatus(context.Background(), home, os.Getuid(), proxy.Env{},
				NodeRequest{InstallationID: inst, CoreURL: core.URL})
			if reg.State != tc.reg {
				t.Errorf("registration %+v, want %s", reg, tc.reg)
			}
			if tc.state == "" {
				if view != nil {
					t.Errorf("Core asked: %+v", view)
				}
				return
			}
			if view == nil || view.State != tc.state || view.URL != core.URL {
				t.Fatalf("Core %+v, want %s", view, tc.state)
			}
			if tc.state == CoreProviderNotReady && view.Diagnostic != "docker_unavailable" {
				t.Errorf("diagnostic %q", view.Diagnostic)
			}
			if reg.NodeID != nodeID || strings.Contains(reg.Error+view.Error, cred) {
				t.Errorf("registration %+v, Core %+v", reg, view)
			}
		})
	}
}
