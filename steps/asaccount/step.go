package asaccount

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Runner runs one request as the service account and returns the child's
// answer. The real one is Children.Run; tests run a workflow's steps in
// process.
type Runner func(ctx context.Context, req Request) (Answer, error)

// Data is what a Step needs of its run. A Step asks at each call, so a run
// may change either before its steps run.
type Data interface {
	// ChildInput is the workflow's own inputs for the request of the step
	// of state (verify: of its verification), encoded as the Request's
	// Input; nil for none. It holds a secret only for the step that needs
	// it (install: the enrollment token for register's run).
	ChildInput(state workflow.State, verify bool) any
	// Child runs a request as the service account.
	Child() Runner
}

// Step runs the step of one ServiceAccount state of a workflow as the
// service account, and records the child's answer as its result. It is a
// workflow.Step and a workflow.Verifier, whose verification also runs as
// the account. A refusal of the child is a refusal that changed nothing
// (StepErr): the engine records the step as never begun.
type Step struct {
	// Workflow is the definition's name, State the step's state.
	Workflow string
	State    workflow.State
	D        Data
	// IfNoAccount, when set, is the step's event when the service account
	// does not exist in Accounts: nothing of the node can then be the
	// account's, so the step has nothing to do and runs no child.
	IfNoAccount workflow.Event
	Accounts    accounts.Databases
}

// Request is the step's request with the run's facts.
func (s Step) Request(facts workflow.Facts, verify bool) (Request, error) {
	req := Request{Workflow: s.Workflow, Step: string(s.State), Verify: verify, Facts: maps.Clone(map[string]string(facts))}
	if in := s.D.ChildInput(s.State, verify); in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return Request{}, fmt.Errorf("encode the %s input of step %s: %w", s.Workflow, s.State, err)
		}
		req.Input = raw
	}
	return req, nil
}

// Call sends the step's request to the child and returns its answer and
// error as the Runner returned them.
func (s Step) Call(ctx context.Context, facts workflow.Facts, verify bool) (Answer, error) {
	req, err := s.Request(facts, verify)
	if err != nil {
		return Answer{}, err
	}
	return s.D.Child()(ctx, req)
}

// noAccount reports whether the step has nothing to do because the
// service account does not exist.
func (s Step) noAccount() (bool, error) {
	if s.IfNoAccount == "" {
		return false, nil
	}
	_, err := s.Accounts.LookupUser(layout.Account)
	if errors.Is(err, accounts.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("the service account: %w", err)
	}
	return false, nil
}

// Run implements workflow.Step.
func (s Step) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	none, err := s.noAccount()
	if err != nil {
		return workflow.Result{}, err
	}
	if none {
		return workflow.Result{Event: s.IfNoAccount}, nil
	}
	a, err := s.Call(ctx, facts, false)
	if err != nil {
		return workflow.Result{}, StepErr(err)
	}
	return a.Result(), nil
}

// Verify implements workflow.Verifier.
func (s Step) Verify(ctx context.Context, facts workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	none, err := s.noAccount()
	if err != nil {
		return workflow.Unknown, workflow.Result{}, err
	}
	if none {
		return workflow.Done, workflow.Result{Event: s.IfNoAccount}, nil
	}
	a, err := s.Call(ctx, facts, true)
	if err != nil {
		return workflow.Unknown, workflow.Result{}, StepErr(err)
	}
	switch a.Outcome {
	case workflow.Done, workflow.NotDone, workflow.Unknown:
	default:
		return workflow.Unknown, workflow.Result{}, fmt.Errorf("step %s: the service-account process answered outcome %d", s.State, a.Outcome)
	}
	return a.Outcome, a.Result(), nil
}
