package uninstall

import (
	"context"

	"github.com/openagentcore/oac-node-install/workflow"
)

// askCoreStep is the Core check (CONTRACT §2.4), in the service-account
// child. Run makes it once before the journal exists, so a refusal
// changes nothing; the step then records that answer. A resumed run whose
// journal lacks the answer asks again.
type askCoreStep struct{ e *Env }

func (s askCoreStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	if p := s.e.precheck; p != nil {
		return *p, nil
	}
	return s.e.serviceStep(workflow.UninstallAskCore).Run(ctx, facts)
}
