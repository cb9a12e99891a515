package asaccount

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/openagentcore/oac-node-install/workflow"
)

// Role is the privsep role of the child that runs root's workflows' steps
// as the service account.
const Role = "node-step"

// Request is what root sends the child for one step.
type Request struct {
	// Workflow is the definition's name (install, uninstall): it picks
	// the Server.
	Workflow string `json:"workflow"`
	// Step is the state whose step runs, or a request of the workflow's
	// own that is no state (install's configuration read and check).
	Step string `json:"step"`
	// Verify asks for the step's verification (workflow.Verifier) instead
	// of its run.
	Verify bool `json:"verify,omitempty"`
	// Facts are the run's facts as the step sees them.
	Facts map[string]string `json:"facts"`
	// Input is the workflow's own inputs, typed by it (the installation's
	// options, Core's configuration, the token for the register step).
	Input json.RawMessage `json:"input,omitempty"`
}

// Answer is the child's answer to one Request.
type Answer struct {
	// Outcome is a verification's outcome (zero for a run).
	Outcome workflow.Outcome  `json:"outcome,omitempty"`
	Event   workflow.Event    `json:"event,omitempty"`
	Facts   map[string]string `json:"facts,omitempty"`
	// Output is the workflow's own extra answer, typed by it (install's
	// configuration and checks).
	Output json.RawMessage `json:"output,omitempty"`
}

// Result is the step's result the answer carries.
func (a Answer) Result() workflow.Result {
	return workflow.Result{Event: a.Event, Facts: a.Facts}
}

// DecodeInput unmarshals the request's Input into v, refusing unknown
// fields: parent and child are the same binary, so a mismatch is a bug.
// An empty Input leaves v as it is.
func (r Request) DecodeInput(v any) error {
	if len(r.Input) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(r.Input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode the %s input of step %s: %w", r.Workflow, r.Step, err)
	}
	return nil
}

// DecodeOutput unmarshals the answer's Output into v. An empty Output
// leaves v as it is.
func (a Answer) DecodeOutput(v any) error {
	if len(a.Output) == 0 {
		return nil
	}
	if err := json.Unmarshal(a.Output, v); err != nil {
		return fmt.Errorf("decode the answer of the service-account process: %w", err)
	}
	return nil
}
