package install

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/openagentcore/oac-node-install/steps/generation"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// ChildRunner runs one service-account step in a child and returns its
// answer. The real one calls privsep.Run with generation.InstallRole;
// tests run generation.RunInstallStep in process.
type ChildRunner func(ctx context.Context, req generation.InstallStepRequest) (generation.InstallStepResult, error)

// NodeData is what a NodeStep needs of the run.
type NodeData interface {
	// NodeRequest is the run's inputs for the child (no step, no token).
	NodeRequest() generation.InstallStepRequest
	// Token is the enrollment token read from standard input ("" when the
	// node is registered).
	Token() string
	// Child runs a request in the service-account child.
	Child() ChildRunner
}

// NodeStep runs the service-account step Name in a child. It is a
// workflow.Step and, for the Verify states, a workflow.Verifier whose
// verification also runs in a child.
type NodeStep struct {
	Name string
	D    NodeData
}

func (s NodeStep) request(facts workflow.Facts, verify bool) generation.InstallStepRequest {
	req := s.D.NodeRequest()
	req.Step, req.Verify, req.Facts = s.Name, verify, maps.Clone(map[string]string(facts))
	if s.Name == string(workflow.InstallRegister) && !verify {
		req.Token = s.D.Token()
	}
	return req
}

// Run implements workflow.Step.
func (s NodeStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	res, err := s.D.Child()(ctx, s.request(facts, false))
	if err != nil {
		return workflow.Result{}, childErr(err)
	}
	return workflow.Result{Event: res.Event, Facts: res.Facts}, nil
}

// Verify implements workflow.Verifier.
func (s NodeStep) Verify(ctx context.Context, facts workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	res, err := s.D.Child()(ctx, s.request(facts, true))
	if err != nil {
		return workflow.Unknown, workflow.Result{}, childErr(err)
	}
	switch res.Outcome {
	case workflow.Done, workflow.NotDone, workflow.Unknown:
	default:
		return workflow.Unknown, workflow.Result{}, fmt.Errorf("step %s: the service-account process answered outcome %d", s.Name, res.Outcome)
	}
	return res.Outcome, workflow.Result{Event: res.Event, Facts: res.Facts}, nil
}

// childErr marks a child's refusal (privsep.ClassRefused, or a
// generation.RefusalError from a child run in process) as a
// workflow.Refusal that changed nothing: the engine records the step as
// never begun, and the command reports the refusal as it stands, saying
// "Nothing was changed." only when nothing was.
func childErr(err error) error {
	var ce *privsep.ChildError
	var ref *generation.RefusalError
	if (errors.As(err, &ce) && ce.Class() == privsep.ClassRefused) || errors.As(err, &ref) {
		return workflow.Unchanged(workflow.Refuse(err))
	}
	return err
}

// ChildStates are the install states whose step runs as the service
// account; the child knows each by its state name.
var ChildStates = []workflow.State{workflow.InstallNodeRoot, workflow.InstallMetadata, workflow.InstallDownloads, workflow.InstallHelper,
	workflow.InstallLease, workflow.InstallRuntime, workflow.InstallNetwork, workflow.InstallProviderConfig, workflow.InstallRegister,
	workflow.InstallWaitReady}

// NodeSteps binds every service-account state of the install workflow to a
// NodeStep.
func NodeSteps(d NodeData) map[workflow.State]workflow.Step {
	out := map[workflow.State]workflow.Step{}
	for _, st := range ChildStates {
		out[st] = NodeStep{Name: string(st), D: d}
	}
	return out
}

// PrivsepChild is the real ChildRunner: each request runs in a new child as
// the service account, from the binary root captured at start. The
// account's uid, gid and groups are looked up in dbs at every call (the
// account step creates the account during the run).
func PrivsepChild(base privsep.Options, dbs accounts.Databases) ChildRunner {
	return func(ctx context.Context, req generation.InstallStepRequest) (generation.InstallStepResult, error) {
		o := base
		u, err := dbs.LookupUser(layout.Account)
		if err != nil {
			return generation.InstallStepResult{}, fmt.Errorf("the service account: %w", err)
		}
		groups, err := dbs.SupplementaryGroups(layout.Account)
		if err != nil {
			return generation.InstallStepResult{}, fmt.Errorf("the service account's groups: %w", err)
		}
		o.UID, o.GID, o.Groups = u.UID, u.GID, groups
		o.Role = generation.InstallRole
		o.Request = req
		r, err := privsep.Run(ctx, o)
		if err != nil {
			return generation.InstallStepResult{}, err
		}
		var res generation.InstallStepResult
		if err := r.Decode(&res); err != nil {
			return generation.InstallStepResult{}, err
		}
		return res, nil
	}
}
