package generation

import (
	"context"
	"errors"
	"fmt"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/workflow"
)

// publishStep publishes the final configuration <g>.json, write-once and
// durable (file and directory fsynced): the plan with, for Docker, the
// local image ID the import resolved. An existing <g>.json with other bytes
// is drift and refuses; it is never overwritten.
type publishStep struct{ d noderoot.Data }

func (s publishStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	d := s.d
	g := d.Identity().Generation
	if facts[factPublished] == "true" {
		if _, ok, err := noderoot.ReadFinal(d, g); err != nil || !ok {
			return workflow.Result{}, fmt.Errorf("the published configuration of generation %d is gone: %v", g, err)
		}
		return workflow.Result{}, nil
	}
	_, plan, err := recordedPlan(d)
	if err != nil {
		return workflow.Result{}, err
	}
	final := plan.Clone()
	if final.Docker != nil {
		final.Docker.Image = facts[factImage]
	} else if facts[factImage] != final.Microsandbox.Image {
		return workflow.Result{}, fmt.Errorf("the import resolved %s, the plan names %s", facts[factImage], final.Microsandbox.Image)
	}
	if err := provider.CheckFinal(final, plan); err != nil {
		return workflow.Result{}, err
	}
	data, err := final.Marshal()
	if err != nil {
		return workflow.Result{}, err
	}
	if err := noderoot.PublishRecord(d.Root(), noderoot.FinalRel(g), data, 0o600); err != nil {
		if errors.Is(err, safefile.ErrConflict) {
			return workflow.Result{}, workflow.Unchanged(noderoot.Refusal("Inspect it with `oac-node-install leases`", fmt.Errorf("%w: %w", ErrPlanDrift, err)))
		}
		return workflow.Result{}, err
	}
	d.Logf("published %s", noderoot.FinalRel(g))
	return workflow.Result{}, nil
}
