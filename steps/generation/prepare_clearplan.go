package generation

import (
	"context"
	"fmt"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/workflow"
)

// clearPlanStep runs once the final configuration is durable: it removes
// the import's unpacked archive (the downloaded archive stays for repair)
// and then the plan, fsyncing the directory. Until the plan is gone an
// interruption revalidates the same plan and final identity.
type clearPlanStep struct{ d noderoot.Data }

func (s clearPlanStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	d := s.d
	g := d.Identity().Generation
	final, ok, err := noderoot.ReadFinal(d, g)
	if err != nil {
		return workflow.Result{}, err
	}
	if !ok {
		return workflow.Result{}, fmt.Errorf("generation %d has no published configuration; the plan is kept", g)
	}
	// An interruption between publication and here resumes with the same
	// plan and final identity, or refuses.
	if _, plan, err := recordedPlan(d); err == nil {
		if err := provider.CheckFinal(final, plan); err != nil {
			return workflow.Result{}, workflow.Unchanged(noderoot.Refusal("Inspect it with `oac-node-install leases`", fmt.Errorf("%w: %w", ErrPlanDrift, err)))
		}
	} else if _, _, present, _ := noderoot.ReadPlan(d, g); present {
		return workflow.Result{}, workflow.Unchanged(noderoot.Refusal("Inspect it with `oac-node-install leases`", err))
	}
	if err := noderoot.CheckIdentity(d, final); err != nil {
		return workflow.Result{}, workflow.Unchanged(noderoot.Refusal("", err))
	}
	dir, err := noderoot.ReleaseRel(d, final)
	if err != nil {
		return workflow.Result{}, err
	}
	if err := noderoot.RemoveUnpacked(d, dir); err != nil {
		return workflow.Result{}, err
	}
	return workflow.Result{}, lease.RemovePreparing(d.Node().Generations(), g, d.UID())
}
