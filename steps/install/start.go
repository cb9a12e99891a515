package install

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/workflow"
)

// ActiveTimeout bounds the wait for the unit to become active.
var ActiveTimeout = 30 * time.Second

// startStep enables and starts the unit (restarting it when this run
// changed its unit or env file) and waits until systemd reports it active.
// Enabling changes links in /etc/systemd/system after the unit step's
// reload; systemd 257 and later then report every unit as needing a
// daemon-reload until the next one (systemctl enable reloads after it
// links, CONTRACT §4.1), so the step reloads when systemd says so after
// enabling, also when an earlier run enabled and was stopped before it
// reloaded.
type startStep struct{ d Data }

func (s startStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	d := s.d
	unit := (unitStep{d}).unit().Name()
	m := d.Systemd()
	if err := m.Enable(ctx, unit); err != nil {
		return workflow.Result{}, err
	}
	st, err := m.State(ctx, unit)
	if err != nil {
		return workflow.Result{}, err
	}
	if st.NeedDaemonReload {
		d.Printf("reload systemd")
		if err := m.Reload(ctx); err != nil {
			return workflow.Result{}, err
		}
	}
	if facts[factRestart] == "true" && st.ActiveState == "active" {
		d.Printf("restart %s", unit)
		if err := m.Stop(ctx, unit); err != nil && !errors.Is(err, systemd.ErrNoSuchUnit) {
			return workflow.Result{}, err
		}
	}
	if st.ActiveState != "active" || facts[factRestart] == "true" {
		d.Printf("start %s", unit)
		if err := m.Start(ctx, unit); err != nil {
			return workflow.Result{}, err
		}
	}
	if _, err := systemd.WaitActive(ctx, m, unit, ActiveTimeout, 200*time.Millisecond); err != nil {
		return workflow.Result{}, fmt.Errorf("%w; see `sudo journalctl -u %s`", err, unit)
	}
	return workflow.Result{}, nil
}

// Check: systemd reports the unit enabled and active, and needs no
// daemon-reload.
func (s startStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	st, err := s.d.Systemd().State(ctx, (unitStep{s.d}).unit().Name())
	if err != nil || st.ActiveState != "active" || st.UnitFileState != "enabled" || st.NeedDaemonReload {
		return notDone, workflow.Result{}, nil
	}
	return done, workflow.Result{}, nil
}
