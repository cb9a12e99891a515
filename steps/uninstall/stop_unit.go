package uninstall

import (
	"context"
	"errors"

	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// stopUnitStep stops and disables the node's unit (systemctl disable
// --now); a unit systemd does not know is already stopped.
type stopUnitStep struct{ e *Env }

func (s stopUnitStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	unit := layout.UnitName(s.e.Opts.InstallationID)
	m := s.e.Manager
	s.e.Printf("stop and disable %s", unit)
	if err := m.Stop(ctx, unit); err != nil && !errors.Is(err, systemd.ErrNoSuchUnit) {
		return workflow.Result{}, err
	}
	if err := m.Disable(ctx, unit); err != nil && !errors.Is(err, systemd.ErrNoSuchUnit) {
		return workflow.Result{}, err
	}
	return workflow.Result{Event: workflow.EventUnitStopped}, nil
}
