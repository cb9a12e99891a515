package generation

import (
	"context"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/workflow"
)

// importStartStep records import_started true in the plan before the
// importer runs: from then on collection treats the generation as possibly
// imported, and a missing native file never proves native absence.
type importStartStep struct{ d noderoot.Data }

func (s importStartStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	if facts[factPublished] == "true" {
		return workflow.Result{}, nil
	}
	p, _, err := recordedPlan(s.d)
	if err != nil {
		return workflow.Result{}, err
	}
	if p.ImportStarted {
		return workflow.Result{}, nil
	}
	p.ImportStarted = true
	return workflow.Result{}, lease.WritePreparing(s.d.Node().Generations(), p, s.d.UID())
}
