package install

import (
	"context"
	"fmt"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/workflow"
)

// leaseStep creates the enrolled generation's lease and its durable
// identity record, or validates them when an earlier run made them. Its
// policy is Inspect: an interruption may leave a lease whose identity never
// became durable, which only an operator may judge.
type leaseStep struct{ e *NodeEnv }

func (s leaseStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	e := s.e
	id := e.Identity()
	ok, err := e.LeaseExists()
	if err != nil {
		return workflow.Result{}, err
	}
	var l *lease.Lease
	if ok {
		l, err = lease.Open(e.Node().Generations(), id, e.UID())
	} else {
		e.Logf("initialize the lease of generation %d", id.Generation)
		l, err = lease.Initialize(e.Node().Generations(), id, e.UID())
	}
	if err != nil {
		return workflow.Result{}, noderoot.Refusal("Inspect it with `oac-node-install leases`", fmt.Errorf("lease of generation %d: %w", id.Generation, err))
	}
	return workflow.Result{}, l.Close()
}

// Check: the lease and its identity exist and open (a lease that does not
// refuses, as the step does).
func (s leaseStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	ok, err := e.LeaseExists()
	if err != nil || !ok {
		return notDone, workflow.Result{}, err
	}
	l, err := lease.Open(e.Node().Generations(), e.Identity(), e.UID())
	if err != nil {
		return 0, workflow.Result{}, noderoot.Refusal("Inspect it with `oac-node-install leases`", fmt.Errorf("lease of generation %d: %w", e.Identity().Generation, err))
	}
	return done, workflow.Result{}, l.Close()
}
