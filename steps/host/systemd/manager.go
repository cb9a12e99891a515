package systemd

import (
	"context"
	"fmt"
	"time"
)

// Manager is the service manager as the installer uses it: the calls of
// the install, uninstall and status workflows and nothing else. Unit names
// are full names (oac-node-<id>.service). Every call takes the caller's
// context; none starts a process.
type Manager interface {
	// Reload is daemon-reload: systemd rereads every unit file.
	Reload(ctx context.Context) error
	// Enable links the unit into the targets its [Install] section names
	// (the unit file must already be in /etc/systemd/system).
	Enable(ctx context.Context, unit string) error
	// Disable removes those links. Disabling a unit that is not enabled is
	// not an error.
	Disable(ctx context.Context, unit string) error
	// Start queues a start job (mode "replace") and waits for its result;
	// a result other than "done" is ErrJobFailed.
	Start(ctx context.Context, unit string) error
	// Stop queues a stop job and waits for its result. Stopping a unit
	// systemd does not know is ErrNoSuchUnit.
	Stop(ctx context.Context, unit string) error
	// ResetFailed clears the unit's failed state and restart counter; a
	// unit systemd does not know is ErrNoSuchUnit.
	ResetFailed(ctx context.Context, unit string) error
	// State reads the unit's load and active state and, for a service, its
	// restart count and last main process exit status.
	State(ctx context.Context, unit string) (UnitState, error)
	// Properties reads what status shows of the unit (properties.go).
	Properties(ctx context.Context, unit string) (UnitProperties, error)
	// Version reads the manager's Version property ("252.30-1~deb12u2";
	// version.go).
	Version(ctx context.Context) (string, error)
	// Close releases the connection.
	Close() error
}

// UnitState is what the installer reads of a unit (systemctl show).
type UnitState struct {
	LoadState      string // loaded, not-found, masked, …
	ActiveState    string // active, activating, inactive, failed, …
	SubState       string // running, exited, auto-restart, dead, …
	NRestarts      uint32 // automatic restarts since the last start or reset-failed
	ExecMainStatus int32  // exit status (or signal) of the last main process
	UnitFileState  string // enabled, disabled, static, … ("" when not known)
	// NeedDaemonReload: the unit's file (or a drop-in) changed on disk
	// since systemd loaded it.
	NeedDaemonReload bool
}

func (s UnitState) String() string {
	return fmt.Sprintf("%s/%s (load %s, %d restarts, last exit status %d)",
		s.ActiveState, s.SubState, s.LoadState, s.NRestarts, s.ExecMainStatus)
}

// ReloadIfNeeded makes systemd's view of unit current with its file on
// disk, doing a daemon-reload (which rereads every unit file and costs far
// more than starting a unit) only when systemd says it is needed: the unit
// is not loaded (LoadState other than "loaded": a unit file systemd has not
// read, or a name it cached as not-found before the file existed) or is
// loaded from an older version of its file (NeedDaemonReload). Reading the
// unit's state loads a unit systemd does not know yet from its current
// file, as starting it would. It reports whether it reloaded.
func ReloadIfNeeded(ctx context.Context, m Manager, unit string) (bool, error) {
	st, err := m.State(ctx, unit)
	if err != nil {
		return false, err
	}
	if st.LoadState == "loaded" && !st.NeedDaemonReload {
		return false, nil
	}
	return true, m.Reload(ctx)
}

// WaitActive polls the unit's state every interval until its ActiveState is
// "active", and returns that state. It returns an error wrapping
// ErrNotActive, with the last state seen, when the unit is "failed" or still
// not active once timeout has passed; and ctx's error when ctx ends first.
func WaitActive(ctx context.Context, m Manager, unit string, timeout, interval time.Duration) (UnitState, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		st, err := m.State(ctx, unit)
		if err != nil {
			return st, fmt.Errorf("wait for %s to be active: %w", unit, err)
		}
		switch st.ActiveState {
		case "active":
			return st, nil
		case "failed":
			return st, fmt.Errorf("%s is %s: %w", unit, st, ErrNotActive)
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("wait for %s to be active: %w", unit, ctx.Err())
		case <-deadline.C:
			return st, fmt.Errorf("%s is still %s after %s: %w", unit, st, timeout, ErrNotActive)
		case <-tick.C:
		}
	}
}
