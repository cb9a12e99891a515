package generation

import (
	"context"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/workflow"
)

// droppedStep publishes the dropped marker last, write-once, after the
// file cleanup is durable. A dropped generation is never prepared or used
// again; its configuration, plan and journals stay as receipts.
type droppedStep struct{ d noderoot.Data }

func (s droppedStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	s.d.Logf("generation %d dropped", s.d.Identity().Generation)
	return workflow.Result{}, lease.WriteDropped(s.d.Node().Generations(), s.d.Identity(), s.d.UID())
}
