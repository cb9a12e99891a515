package install

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/workflow"
)

// serviceSteps binds every state of the install workflow that runs as the
// service account (workflow.ServiceAccount in its definition) to a
// serviceStep of d: steps/generation's install steps, run in the child.
func serviceSteps(d asaccount.Data) map[workflow.State]workflow.Step {
	def := workflow.InstallDefinition()
	out := map[workflow.State]workflow.Step{}
	for _, st := range def.AccountStates(workflow.ServiceAccount) {
		out[st] = serviceStep{asaccount.Step{Workflow: def.Name, State: st, D: d}}
	}
	return out
}

// serviceStep runs a service-account state's step in the child
// (asaccount.Step), and checks it with the answer of the one child that
// checks them all (Check).
type serviceStep struct{ asaccount.Step }

// nodeChecker is what checks every service-account step in one child (Env
// implements it).
type nodeChecker interface {
	NodeChecks(ctx context.Context, facts workflow.Facts) (map[string]NodeCheck, error)
}

// Check implements workflow.Checker with the answer of one child for all
// service-account steps; without an account, nothing of the node exists
// yet (not done).
func (s serviceStep) Check(ctx context.Context, facts workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	nc, ok := s.D.(nodeChecker)
	if !ok {
		return notDone, workflow.Result{}, nil
	}
	checks, err := nc.NodeChecks(ctx, facts)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	c, ok := checks[string(s.State)]
	if !ok || c.Outcome != workflow.Done {
		return notDone, workflow.Result{}, nil
	}
	return done, workflow.Result{Event: c.Event, Facts: c.Facts}, nil
}

// childRequest is the install workflow's request to the child for step,
// which is a state or a request of the installation's own (StepCheck,
// StepConfiguration), with the run's facts and the installation's input.
func childRequest(step string, facts map[string]string, in Input) (asaccount.Request, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return asaccount.Request{}, fmt.Errorf("encode the installation's input: %w", err)
	}
	return asaccount.Request{Workflow: workflow.InstallDefinition().Name, Step: step, Facts: maps.Clone(facts), Input: raw}, nil
}
