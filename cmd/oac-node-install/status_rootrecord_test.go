package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/status"
	"github.com/openagentcore/oac-node-install/workflow"
)

// otherNodeID is another node of the same Core: the one a forged
// identity.json names.
const otherNodeID = "0f0e0d0c-0b0a-4908-8706-050403020100"

// recordInstallWithNodeID replaces the status host's install journal with
// one whose wait_ready step recorded nodeID, as root's engine records the
// fact the node's readiness check returned once Core answered for it.
func (h *statusHost) recordInstallWithNodeID(t *testing.T, nodeID string) {
	t.Helper()
	journal := filepath.Join(h.host.JournalDir(testID), "install.journal")
	must(t, os.Remove(journal))
	os.Remove(journal + ".lock")
	def := workflow.InstallDefinition()
	steps := map[workflow.State]workflow.Step{}
	for _, sd := range def.States {
		var facts map[string]string
		if sd.Name == workflow.InstallWaitReady {
			facts = map[string]string{"node_id": nodeID}
		}
		st := workflow.StepFunc(func(context.Context, workflow.Facts) (workflow.Result, error) {
			return workflow.Result{Facts: facts}, nil
		})
		if sd.Policy == workflow.Verify {
			steps[sd.Name] = verifyingStep{st}
		} else {
			steps[sd.Name] = st
		}
	}
	r := &workflow.Runner{Def: def, Steps: steps, Journal: journal, Binding: workflow.Binding{Version: workflow.Version, InstallationID: testID}}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestStatusRootRecordIgnoresAForgedIdentity: the service account rewrites
// its identity.json to name another node of the Core. status --json's
// root_record (root's own journal) keeps the node id root recorded; only
// the registration (marked as the account's claim) shows the forged id. A
// fleet tool that removes root_record.node_id in Core removes this host's
// node, never the other one.
func TestStatusRootRecordIgnoresAForgedIdentity(t *testing.T) {
	h := newStatusHost(t)
	h.recordInstallWithNodeID(t, testNodeID)
	doc, out := statusDoc(t, h.root, exitOK)
	s := doc.Installations[0]
	if r := s.RootRecord; r == nil || r.Source != status.SourceRoot || r.NodeID != testNodeID || !r.Registered ||
		r.Journal != filepath.Join(h.host.JournalDir(testID), "install.journal") {
		t.Fatalf("root_record %+v before the forgery\n%s", s.RootRecord, out)
	}
	if s.Registration == nil || s.Registration.Source != status.SourceAccount || s.Registration.NodeID != testNodeID {
		t.Fatalf("registration %+v before the forgery", s.Registration)
	}

	// The account (owner of the node root) names another node.
	data, err := os.ReadFile(h.node.Identity())
	must(t, err)
	must(t, os.WriteFile(h.node.Identity(), []byte(strings.ReplaceAll(string(data), testNodeID, otherNodeID)), 0o600))
	chownHome(t, h.host)

	_, out = runStatusJSON(t, h.root)
	var raw struct {
		Installations []map[string]json.RawMessage `json:"installations"`
	}
	must(t, json.Unmarshal([]byte(out), &raw))
	var root status.RootRecord
	var claim status.Registration
	must(t, json.Unmarshal(raw.Installations[0]["root_record"], &root))
	must(t, json.Unmarshal(raw.Installations[0]["registration"], &claim))
	if root.Source != "root" || root.NodeID != testNodeID || !root.Registered {
		t.Errorf("root_record after the account named %s: %+v\n%s", otherNodeID, root, out)
	}
	if claim.Source != "account" || claim.NodeID != otherNodeID {
		t.Errorf("registration after the forgery: %+v (want the account's claim %s, marked so)", claim, otherNodeID)
	}
	// The advice names the forgery and removes root's node, never the
	// one the account named.
	var next struct {
		Installations []struct {
			Next string `json:"next"`
		} `json:"installations"`
	}
	must(t, json.Unmarshal([]byte(out), &next))
	if n := next.Installations[0].Next; !strings.Contains(n, "names the node "+otherNodeID+", not the node "+testNodeID) ||
		!strings.Contains(n, "remove the node "+testNodeID+" in Web") || strings.Contains(n, "removed in Core") {
		t.Errorf("next after the forgery: %q", n)
	}
}

// TestStatusRootRecordWithoutRegistration: before root recorded a node id
// (a fresh host, or an install that has not reached wait_ready), the
// root_record says not registered, whatever the account's files claim.
func TestStatusRootRecordWithoutRegistration(t *testing.T) {
	h := newStatusHost(t) // its install journal carries no node id
	_, out := runStatusJSON(t, h.root)
	var doc status.Document
	must(t, json.Unmarshal([]byte(out), &doc))
	s := doc.Installations[0]
	if r := s.RootRecord; r == nil || r.Source != "root" || r.NodeID != "" || r.Registered {
		t.Errorf("root_record %+v, want root's: no node id, not registered\n%s", s.RootRecord, out)
	}
	if s.Registration == nil || s.Registration.State != "registered" || s.Registration.Source != "account" {
		t.Errorf("registration %+v: the account's claim, marked so", s.Registration)
	}
}

func runStatusJSON(t *testing.T, root string) (int, string) {
	t.Helper()
	code, out, errOut := runOn(t, root, "status", "--json")
	if code != exitOK && code != exitAttention {
		t.Fatalf("status --json: exit %d\n%s%s", code, out, errOut)
	}
	return code, out
}
