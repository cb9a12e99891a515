package generation

import (
	"context"
	"fmt"
	"os"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/workflow"
)

// importStep imports the Runtime image into the provider and resolves its
// local identity: Docker's immutable local image ID (the config or the
// manifest digest, whichever the engine's store uses), or the microsandbox
// reference in the plan's store. An image the provider already holds is not
// loaded again. Its policy is Verify: after an interruption, the provider
// says whether the import happened.
type importStep struct{ d noderoot.Data }

func (s importStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	if facts[factPublished] == "true" {
		return workflow.Result{Facts: map[string]string{factImage: facts[factImage]}}, nil
	}
	p, plan, err := recordedPlan(s.d)
	if err != nil {
		return workflow.Result{}, err
	}
	if !p.ImportStarted {
		return workflow.Result{}, fmt.Errorf("the plan of generation %d does not record import_started", p.Generation)
	}
	dir, err := noderoot.ReleaseRel(s.d, plan)
	if err != nil {
		return workflow.Result{}, err
	}
	id, err := noderoot.ImportImage(ctx, s.d, plan, dir)
	if err != nil {
		return workflow.Result{}, err
	}
	return workflow.Result{Facts: map[string]string{factImage: id}}, nil
}

// Verify asks the provider: Docker resolves the image (done) or does not
// (not done); for microsandbox a complete inventory lists the reference
// (done, if it verifies) or does not (not done). A provider that cannot
// answer leaves the outcome unknown.
func (s importStep) Verify(ctx context.Context, facts workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	if facts[factPublished] == "true" {
		return workflow.Done, workflow.Result{Facts: map[string]string{factImage: facts[factImage]}}, nil
	}
	_, plan, err := recordedPlan(s.d)
	if err != nil {
		return workflow.Unknown, workflow.Result{}, err
	}
	done := func(id string) (workflow.Outcome, workflow.Result, error) {
		return workflow.Done, workflow.Result{Facts: map[string]string{factImage: id}}, nil
	}
	if plan.Docker != nil {
		dk, err := s.d.Docker(ctx)
		if err != nil {
			return workflow.Unknown, workflow.Result{}, err
		}
		id, found, err := image.Resolve(ctx, dk, noderoot.WantImage(plan))
		switch {
		case err != nil:
			return workflow.Unknown, workflow.Result{}, err
		case found:
			return done(id)
		}
		return workflow.NotDone, workflow.Result{}, nil
	}
	return verifyMicrosandboxImage(ctx, s.d, plan, done)
}

// verifyMicrosandboxImage decides from a complete inventory of the plan's
// store whether its image was loaded.
func verifyMicrosandboxImage(ctx context.Context, d noderoot.Data, c *provider.Config, done func(string) (workflow.Outcome, workflow.Result, error)) (workflow.Outcome, workflow.Result, error) {
	if !exists(c.Microsandbox.RuntimeHome) {
		return workflow.NotDone, workflow.Result{}, nil // no store: nothing was loaded
	}
	cli, ref, err := noderoot.MicrosandboxFor(d, c)
	if err != nil {
		return workflow.Unknown, workflow.Result{}, err
	}
	inv, err := cli.ListImages(ctx)
	if err != nil {
		return workflow.Unknown, workflow.Result{}, err
	}
	if !inv.Contains(ref) {
		return workflow.NotDone, workflow.Result{}, nil
	}
	if err := cli.VerifyImage(ctx, ref); err != nil {
		return workflow.Unknown, workflow.Result{}, err
	}
	return done(ref.String())
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
