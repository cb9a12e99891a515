package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// runWorkflow runs def against journal with every step succeeding, except
// failAt, which fails.
func runWorkflow(t *testing.T, def *workflow.Definition, journal string, b workflow.Binding, failAt string) {
	t.Helper()
	steps := map[string]workflow.Step{}
	for _, sd := range def.States {
		name := sd.Step
		st := workflow.StepFunc(func(context.Context, workflow.Facts) (workflow.Result, error) {
			if name == failAt {
				return workflow.Result{}, errors.New("Core answered HTTP 503")
			}
			return workflow.Result{}, nil
		})
		if sd.Policy == workflow.Verify {
			steps[name] = verifyingStep{st}
		} else {
			steps[name] = st
		}
	}
	r := &workflow.Runner{Def: def, Steps: steps, Journal: journal, Binding: b}
	if _, err := r.Run(context.Background()); (err != nil) != (failAt != "") {
		t.Fatalf("%s: %v", def.Name, err)
	}
}

type verifyingStep struct{ workflow.StepFunc }

func (verifyingStep) Verify(context.Context, workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	return workflow.NotDone, workflow.Result{}, nil
}

// TestStatusShowsRootAndNodeWorkflows runs status over a host with a failed
// install journal (root's) and a complete prepare journal in the node root
// (the service account's, read through the child).
func TestStatusShowsRootAndNodeWorkflows(t *testing.T) {
	root, _ := fakeHost(t)
	host := layout.Host{Root: root}
	if err := os.MkdirAll(host.JournalDir(testID), 0o700); err != nil {
		t.Fatal(err)
	}
	runWorkflow(t, workflow.InstallDefinition(), host.JournalDir(testID)+"/install.journal",
		workflow.Binding{Version: workflow.Version, InstallationID: testID}, "register")
	node := layout.Node{Root: host.NodeRoot(testID)}
	if err := os.MkdirAll(node.Journals(), 0o700); err != nil {
		t.Fatal(err)
	}
	runWorkflow(t, workflow.PrepareDefinition(), node.GenerationJournal("prepare", 1),
		workflow.Binding{Version: workflow.Version, InstallationID: testID, Generation: 1, SpecificationDigest: testDigest}, "")
	if out, err := exec.Command("chown", "-R", "65534:65534", host.Home()).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}

	var out, errOut bytes.Buffer
	if code := run([]string{"status", "--host-root", root, "--json"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got struct {
		Workflows []workflow.Report `json:"workflows"`
		Nodes     []nodeInspection  `json:"nodes"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	byName := map[string]workflow.Report{}
	for _, r := range got.Workflows {
		byName[r.Workflow] = r
	}
	if r := byName["install"]; r.Condition != workflow.Failed || r.State != workflow.InstallRegister || r.LastError == nil {
		t.Errorf("install: %+v", r)
	}
	if r := byName["prepare"]; r.Condition != workflow.Complete || r.Binding == nil || r.Binding.Generation != 1 {
		t.Errorf("prepare: %+v", r)
	}
	if len(got.Nodes) != 1 || len(got.Nodes[0].Generations) != 2 {
		t.Errorf("nodes: %+v", got.Nodes)
	}

	out.Reset()
	if code := run([]string{"status", "--host-root", root}, nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"install: failed", "last error:    register: Core answered HTTP 503", "prepare: complete", "generation 2", "identity-missing"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
}
