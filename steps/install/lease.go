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
// policy is Verify: a run that stopped in it (killed, or its journal's
// disk full at the step's begin or done record) is judged from the host.
// Neither the lease nor its identity: the step never made anything, and
// runs. Both, opening as this generation's: it ran, and is done. Anything
// between (a lease whose identity never became durable) is what only an
// operator may judge, and the rerun refuses it.
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

// Verify judges a step that began and did not finish from the host (see
// leaseStep).
func (s leaseStep) Verify(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	id := e.Identity()
	leaseThere, err := e.LeaseExists()
	if err != nil {
		return workflow.Unknown, workflow.Result{}, err
	}
	identityThere, err := e.Present(noderoot.RecordName(id.Generation, ".lease-identity"))
	if err != nil {
		return workflow.Unknown, workflow.Result{}, err
	}
	if !leaseThere && !identityThere {
		return workflow.NotDone, workflow.Result{}, nil
	}
	l, err := lease.Open(e.Node().Generations(), id, e.UID())
	if err != nil {
		return workflow.Unknown, workflow.Result{}, fmt.Errorf("lease of generation %d: %w; inspect it with `oac-node-install leases`", id.Generation, err)
	}
	return workflow.Done, workflow.Result{}, l.Close()
}
