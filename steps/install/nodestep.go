package install

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/openagentcore/oac-node-install/steps/generation"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// ChildRunner runs one service-account step in a child and returns its
// answer. The real one is Children.Run;
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
// noderoot.RefusalError from a child run in process) as a
// workflow.Refusal that changed nothing: the engine records the step as
// never begun, and the command reports the refusal as it stands, saying
// "Nothing was changed." only when nothing was.
func childErr(err error) error {
	var ce *privsep.ChildError
	var ref *noderoot.RefusalError
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

// Children is the real ChildRunner (Run): the service-account steps run in
// one child, a privsep.Session of generation.InstallRole started from the
// binary root captured at start, while the account's uid, gid and groups
// are those it started with. They are looked up in dbs at every call (the
// account step creates the account during the run, the group step adds it
// to a group); when they differ, the session ends and a new one starts.
// Close ends the last one; Run calls it (Command.EndChild) before it
// releases the host lock, so no process of the account's is left behind
// by the run.
type Children struct {
	base privsep.Options
	dbs  accounts.Databases

	session *privsep.Session
	creds   string // the session's uid, gid and groups
}

// NewChildren returns the Children of base (its Role and Request unused).
func NewChildren(base privsep.Options, dbs accounts.Databases) *Children {
	return &Children{base: base, dbs: dbs}
}

// Run runs one request in the session's child.
func (c *Children) Run(ctx context.Context, req generation.InstallStepRequest) (generation.InstallStepResult, error) {
	u, err := c.dbs.LookupUser(layout.Account)
	if err != nil {
		return generation.InstallStepResult{}, fmt.Errorf("the service account: %w", err)
	}
	groups, err := c.dbs.SupplementaryGroups(layout.Account)
	if err != nil {
		return generation.InstallStepResult{}, fmt.Errorf("the service account's groups: %w", err)
	}
	groups = slices.Sorted(slices.Values(groups))
	creds := fmt.Sprint(u.UID, u.GID, groups)
	if c.session != nil && c.creds != creds {
		if err := c.Close(); err != nil {
			return generation.InstallStepResult{}, err
		}
	}
	if c.session == nil {
		o := c.base
		o.UID, o.GID, o.Groups = u.UID, u.GID, groups
		o.Role, o.Request = generation.InstallRole, nil
		if c.session, err = privsep.Start(ctx, o); err != nil {
			return generation.InstallStepResult{}, err
		}
		c.creds = creds
	}
	r, err := c.session.Call(ctx, req)
	if err != nil {
		return generation.InstallStepResult{}, err
	}
	var res generation.InstallStepResult
	if err := r.Decode(&res); err != nil {
		return generation.InstallStepResult{}, err
	}
	return res, nil
}

// Close ends the session's child, if one runs.
func (c *Children) Close() error {
	if c.session == nil {
		return nil
	}
	err := c.session.Close()
	c.session = nil
	return err
}
