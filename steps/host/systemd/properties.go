package systemd

import (
	"context"
	"fmt"
)

// UnitProperties is what status shows of a unit, as `systemctl show` names
// it: the unit's load and active state and, for a service, its result,
// automatic restarts and how its last main process ended.
type UnitProperties struct {
	LoadState   string `json:"load_state,omitempty"`   // loaded, not-found, masked, …
	ActiveState string `json:"active_state,omitempty"` // active, activating, inactive, failed, …
	SubState    string `json:"sub_state,omitempty"`    // running, exited, auto-restart, dead, …
	// UnitFileState is whether the unit starts at boot: enabled,
	// disabled, static, masked, … ("" when systemd did not say).
	UnitFileState string `json:"unit_file_state,omitempty"`
	// Result is a service's result: success, exit-code, signal,
	// core-dump, timeout, start-limit-hit, …
	Result string `json:"result,omitempty"`
	// NRestarts counts automatic restarts since the last start or
	// reset-failed.
	NRestarts uint32 `json:"restarts"`
	// ExecMainCode is how the last main process ended (CLD_EXITED 1,
	// CLD_KILLED 2, CLD_DUMPED 3; 0 when none has ended), and
	// ExecMainStatus its exit status or signal number.
	ExecMainCode   int32 `json:"exec_main_code"`
	ExecMainStatus int32 `json:"exec_main_status"`
}

// The ExecMainCode values (waitid's si_code).
const (
	CodeExited = 1
	CodeKilled = 2
	CodeDumped = 3
)

// LastExit describes how the last main process ended: "exited with status
// 78", "killed by signal 9", "dumped core (signal 11)", or "" when none has
// ended yet.
func (p UnitProperties) LastExit() string {
	switch p.ExecMainCode {
	case CodeExited:
		return fmt.Sprintf("exited with status %d", p.ExecMainStatus)
	case CodeKilled:
		return fmt.Sprintf("killed by signal %d", p.ExecMainStatus)
	case CodeDumped:
		return fmt.Sprintf("dumped core (signal %d)", p.ExecMainStatus)
	}
	return ""
}

// Properties reads the unit's LoadState, ActiveState and SubState and, for
// a loaded .service, Result, NRestarts, ExecMainCode and ExecMainStatus. It
// changes nothing: a unit systemd has not loaded reads as not-found.
func (d *DBus) Properties(ctx context.Context, unit string) (UnitProperties, error) {
	var p UnitProperties
	cctx, cancel := within(ctx, CallTimeout)
	defer cancel()
	props, err := d.conn.GetUnitPropertiesContext(cctx, unit)
	if err != nil {
		return p, fmt.Errorf("properties of %s: %w", unit, late(ctx, cctx, CallTimeout, translate(err)))
	}
	p.LoadState, _ = props["LoadState"].(string)
	p.ActiveState, _ = props["ActiveState"].(string)
	p.SubState, _ = props["SubState"].(string)
	p.UnitFileState, _ = props["UnitFileState"].(string)
	if p.LoadState != "loaded" || !isService(unit) {
		return p, nil
	}
	svc, err := d.conn.GetUnitTypePropertiesContext(cctx, unit, "Service")
	if err != nil {
		return p, fmt.Errorf("service properties of %s: %w", unit, late(ctx, cctx, CallTimeout, translate(err)))
	}
	p.Result, _ = svc["Result"].(string)
	p.NRestarts, _ = svc["NRestarts"].(uint32)
	p.ExecMainCode, _ = svc["ExecMainCode"].(int32)
	p.ExecMainStatus, _ = svc["ExecMainStatus"].(int32)
	return p, nil
}
