package generation

import (
	"context"
	"fmt"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Facts the prepare steps pass on.
const (
	// factPublished is "true" when the plan step found the generation's
	// final configuration already published and equal to the plan: the
	// remaining steps only revalidate it.
	factPublished = "published"
	// factImage is the image identity the import resolved: Docker's local
	// image ID, or the microsandbox reference.
	factImage = "image"
)

// planStep writes the preparation plan before anything is downloaded:
// <g>.preparing with import_started false and the full planned provider
// configuration, computed from the base provider.json, Core's
// specification for exactly this generation (its digest is the one the
// node asked for) and the verified release the specification names. An
// existing plan must be exactly this plan (its import_started is kept); an
// existing final configuration must equal it but for the Docker image. Any
// drift refuses.
type planStep struct{ d noderoot.Data }

func (s planStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	d := s.d
	id := d.Identity()
	plan, err := computePlan(ctx, d)
	if err != nil {
		return workflow.Result{}, err
	}
	p, pc, havePlan, err := noderoot.ReadPlan(d, id.Generation)
	if err != nil {
		return workflow.Result{}, workflow.Unchanged(err)
	}
	if havePlan && (p.Identity != id || pc == nil || !provider.Equal(pc, plan)) {
		return workflow.Result{}, workflow.Unchanged(noderoot.Refusef(ErrPlanDrift, "Inspect it with `oac-node-install leases`",
			"the preparation plan %s is not the plan for specification %s", d.Node().Generations()+"/"+noderoot.RecordName(id.Generation, ".preparing"), id.SpecificationDigest))
	}
	final, published, err := noderoot.ReadFinal(d, id.Generation)
	if err != nil {
		return workflow.Result{}, workflow.Unchanged(err)
	}
	if published {
		if err := provider.CheckFinal(final, plan); err != nil {
			return workflow.Result{}, workflow.Unchanged(noderoot.Refusal("Inspect it with `oac-node-install leases`", fmt.Errorf("%w: %w", ErrPlanDrift, err)))
		}
		return workflow.Result{Facts: map[string]string{factPublished: "true", factImage: imageOf(final)}}, nil
	}
	if havePlan {
		return workflow.Result{}, nil
	}
	data, err := plan.Marshal()
	if err != nil {
		return workflow.Result{}, err
	}
	d.Logf("plan generation %d: Runtime %s", id.Generation, plan.Specification.Runtime.SourceCommit)
	err = lease.WritePreparing(d.Node().Generations(), lease.Preparing{Identity: id, Configuration: data}, d.UID())
	return workflow.Result{}, err
}

// computePlan computes the generation's plan from the base configuration,
// Core's specification and the verified release.
func computePlan(ctx context.Context, d noderoot.Data) (*provider.Config, error) {
	id := d.Identity()
	base, err := d.Base()
	if err != nil {
		return nil, err
	}
	if base.Generation == id.Generation {
		return nil, workflow.Unchanged(noderoot.Refusef(ErrBaseGeneration, "", "generation %d is the node's base generation; its configuration is provider.json", id.Generation))
	}
	spec, err := d.Specification(ctx)
	if err != nil {
		return nil, err
	}
	md, err := d.Release(ctx, spec.Runtime.SourceCommit)
	if err != nil {
		return nil, err
	}
	if err := release.MatchRelease(spec, md.Release.Manifest); err != nil {
		return nil, noderoot.Artifact(err)
	}
	plan, err := provider.Plan(base, spec, id.Generation, d.Node().Root, d.Home())
	if err != nil {
		return nil, workflow.Unchanged(noderoot.Refusal("", err))
	}
	return plan, nil
}

// imageOf is the image identity a configuration records.
func imageOf(c *provider.Config) string {
	if c.Docker != nil {
		return c.Docker.Image
	}
	return c.Microsandbox.Image
}

// recordedPlan reads the plan the plan step wrote; it must exist with its
// configuration and identity.
func recordedPlan(d noderoot.Data) (lease.Preparing, *provider.Config, error) {
	id := d.Identity()
	p, pc, ok, err := noderoot.ReadPlan(d, id.Generation)
	if err != nil {
		return p, nil, err
	}
	if !ok || pc == nil || p.Identity != id {
		return p, nil, fmt.Errorf("%w: generation %d has no preparation plan for specification %s", ErrPlanDrift, id.Generation, id.SpecificationDigest)
	}
	base, err := d.Base()
	if err != nil {
		return p, nil, err
	}
	if err := provider.CheckPlan(pc, base, d.Node().Root, d.Home()); err != nil {
		return p, nil, err
	}
	return p, pc, nil
}
