package uninstall

import (
	"context"
	"errors"
	"fmt"

	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// childStep runs the service-account step Name in a child. Without the
// account nothing of the node can exist as the account's, so the step has
// nothing to do.
type childStep struct {
	Name  workflow.State
	Event workflow.Event
	e     *Env
}

func (s childStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	if _, err := s.e.DBs.LookupUser(layout.Account); errors.Is(err, accounts.ErrNotFound) {
		return workflow.Result{Event: s.Event}, nil
	} else if err != nil {
		return workflow.Result{}, fmt.Errorf("the service account: %w", err)
	}
	res, err := s.e.Runner(ctx, s.e.request(string(s.Name), facts))
	if err != nil {
		return workflow.Result{}, childErr(err)
	}
	return workflow.Result{Event: res.Event, Facts: res.Facts}, nil
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
