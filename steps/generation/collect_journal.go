package generation

import (
	"context"
	"errors"
	"os"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/workflow"
)

// collectingStep persists the collection journal <g>.collecting, bound to
// the installation, generation and specification digest, with
// native_complete false, before any native or release deletion. An
// existing journal is kept as it is (native_complete never goes back).
type collectingStep struct{ d noderoot.Data }

func (s collectingStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	if facts[factDropped] == "true" {
		return workflow.Result{}, nil
	}
	d := s.d
	id := d.Identity()
	if err := checkCollecting(d); err != nil {
		return workflow.Result{}, err
	}
	if _, err := lease.ReadCollecting(d.Node().Generations(), id.Generation, d.UID()); err == nil {
		return workflow.Result{}, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return workflow.Result{}, err
	}
	return workflow.Result{}, lease.WriteCollecting(d.Node().Generations(), lease.Collecting{Identity: id}, d.UID())
}
