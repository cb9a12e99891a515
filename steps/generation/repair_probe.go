package generation

import (
	"context"
	"fmt"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/workflow"
)

// repairProbeStep runs the provider's readiness probe; file presence never
// establishes readiness. Docker: the configured image must resolve, as the
// same local ID, for linux/amd64. microsandbox: msb must report the
// reference with its digest for linux/amd64 in the configured store. A
// published generation whose image the provider lost is imported again
// from its verified archive first, then probed. A generation that is still
// only planned is left to preparation.
type repairProbeStep struct{ d noderoot.Data }

func (s repairProbeStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	d := s.d
	t, err := findRepairTarget(d)
	if err != nil {
		return workflow.Result{}, err
	}
	c := t.gc.Config
	if !t.gc.Final {
		d.Logf("generation %d is not prepared yet; its preparation resumes it", c.Generation)
		return workflow.Result{}, nil
	}
	id, held, err := noderoot.ImageHeld(ctx, d, c)
	if err != nil {
		return workflow.Result{}, err
	}
	if !held {
		if id, err = noderoot.ImportImage(ctx, d, c, t.dir); err != nil {
			return workflow.Result{}, err
		}
	}
	if err := noderoot.RemoveUnpacked(d, t.dir); err != nil {
		return workflow.Result{}, err
	}
	if id != imageOf(c) {
		return workflow.Result{}, fmt.Errorf("%w: the provider resolves %s, the configuration of generation %d names %s", ErrNotReady, id, c.Generation, imageOf(c))
	}
	d.Logf("generation %d: the provider holds %s", c.Generation, id)
	return workflow.Result{}, nil
}
