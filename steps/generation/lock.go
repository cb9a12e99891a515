package generation

import (
	"context"
	"fmt"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/workflow"
)

// lockStep is the first state of every generation workflow. The locks are
// taken by Run before the engine starts, on every run (a step cannot hold a
// lock across runs); the step checks that they are held: install.lock
// always, the exclusive lease for repair and collection, and for
// preparation whenever the lease exists (a new generation's lease is
// initialized by the next state).
type lockStep struct {
	d      noderoot.Data
	action string
}

func (s lockStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	install, held := s.d.Locked()
	if !install {
		return workflow.Result{}, workflow.Unchanged(fmt.Errorf("%w: install.lock", ErrNotLocked))
	}
	if !held {
		exists, err := s.d.LeaseExists()
		if err != nil {
			return workflow.Result{}, workflow.Unchanged(err)
		}
		if s.action != noderoot.ActionPrepare || exists {
			return workflow.Result{}, workflow.Unchanged(fmt.Errorf("%w: the lease of generation %d", ErrNotLocked, s.d.Identity().Generation))
		}
	}
	return workflow.Result{}, nil
}
