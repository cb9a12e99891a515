package generation

import (
	"context"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/workflow"
)

// leaseStep initializes a new generation's lease: <g>.lease created
// exclusively and fsynced, then its identity record published, then the
// lease held exclusively for the rest of the run. Its policy is Inspect:
// an interruption may leave a lease whose identity never became durable,
// which only an operator may judge; resume refuses and `leases` shows it.
// A lease that already exists was opened and locked by Run.
type leaseStep struct{ d noderoot.Data }

func (s leaseStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	if _, held := s.d.Locked(); held {
		return workflow.Result{}, nil
	}
	s.d.Logf("initialize the lease of generation %d", s.d.Identity().Generation)
	return workflow.Result{}, s.d.InitializeLease()
}
