package generation

import (
	"context"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/workflow"
)

// nativeCompleteStep persists native_complete true in the collection
// journal, before any release file is removed: a retry then finishes a
// partly removed release without running an already removed helper.
type nativeCompleteStep struct{ d noderoot.Data }

func (s nativeCompleteStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	if facts[factDropped] == "true" {
		return workflow.Result{}, nil
	}
	id := s.d.Identity()
	return workflow.Result{}, lease.WriteCollecting(s.d.Node().Generations(), lease.Collecting{Identity: id, NativeComplete: true}, s.d.UID())
}
