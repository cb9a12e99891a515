package generation

import (
	"context"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/workflow"
)

// releaseFilesStep removes the generation's release files: it decides and
// checks everything first (see noderoot.PlanRemoval: shared directories stay, every
// remaining file is hash-checked against the node's own record) and only
// then removes, fsyncing each directory. Files already gone are skipped, so
// an interrupted removal finishes on rerun.
type releaseFilesStep struct{ d noderoot.Data }

func (s releaseFilesStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	if facts[factDropped] == "true" {
		return workflow.Result{}, nil
	}
	gc, err := collectTarget(s.d)
	if err != nil {
		return workflow.Result{}, workflow.Unchanged(err)
	}
	r, err := noderoot.PlanRemoval(s.d, gc)
	if err != nil {
		return workflow.Result{}, workflow.Unchanged(noderoot.Refusal("Nothing is removed until every file is proven private and unreferenced", err))
	}
	if r.Shared() != "" {
		s.d.Logf("release files stay: %s", r.Shared())
		return workflow.Result{}, nil
	}
	return workflow.Result{}, r.Execute(s.d)
}
