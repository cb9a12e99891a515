package generation

import (
	"context"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/workflow"
)

// repairDownloadStep downloads only the missing immutable files of the
// generation's release, at their original paths, each verified before it is
// published; the image archive only when the provider lacks the image.
type repairDownloadStep struct{ d noderoot.Data }

func (s repairDownloadStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	t, err := findRepairTarget(s.d)
	if err != nil {
		return workflow.Result{}, err
	}
	return workflow.Result{}, restoreFiles(ctx, s.d, t.gc.Config)
}
