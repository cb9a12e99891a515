package generation

import (
	"context"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// downloadStep restores the selected release's missing immutable files in
// the plan's release directory, each verified before it is published: the
// release's manifest.json and SHA256SUMS copies (for a releases/ directory),
// the seccomp profile, the microsandbox native files, and the image archive
// unless the provider already holds the image.
type downloadStep struct{ d noderoot.Data }

func (s downloadStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	if facts[factPublished] == "true" {
		return workflow.Result{}, nil
	}
	_, plan, err := recordedPlan(s.d)
	if err != nil {
		return workflow.Result{}, err
	}
	return workflow.Result{}, restoreFiles(ctx, s.d, plan)
}

// restoreFiles downloads what a configuration's release directory misses:
// everything but the image archive, then the archive if the provider does
// not already hold the image.
func restoreFiles(ctx context.Context, d noderoot.Data, c *provider.Config) error {
	spec := c.Specification
	dir, err := noderoot.ReleaseRel(d, c)
	if err != nil {
		return err
	}
	md, err := d.Release(ctx, spec.Runtime.SourceCommit)
	if err != nil {
		return err
	}
	if err := release.MatchRelease(spec, md.Release.Manifest); err != nil {
		return noderoot.Artifact(err)
	}
	if err := noderoot.FetchMissing(ctx, d, dir, md, false); err != nil {
		return err
	}
	_, held, err := noderoot.ImageHeld(ctx, d, c)
	if err != nil || held {
		return err
	}
	return noderoot.FetchMissing(ctx, d, dir, md, true)
}
