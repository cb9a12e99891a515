package uninstall

import (
	"errors"
	"fmt"
	"os"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// removeNodeState removes the node root as the service account, never
// following a link.
func removeNodeState(in NodeOptions, req Input) (workflow.Result, error) {
	in.logf("remove the node state %s", in.nodeRoot(req.InstallationID))
	h, err := safefile.OpenRoot(in.Home)
	if errors.Is(err, os.ErrNotExist) {
		return workflow.Result{Event: workflow.EventStateRemoved}, nil
	}
	if err == nil {
		err = h.RemoveAll(layout.NodeRel(req.InstallationID))
		h.Close()
	}
	if err != nil {
		return workflow.Result{}, fmt.Errorf("remove the node state: %w", err)
	}
	return workflow.Result{Event: workflow.EventStateRemoved}, nil
}
