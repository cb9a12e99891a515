package install

import (
	"context"
	"slices"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// TestNoReloadLeftPending: systemd 257 and later report every unit as
// needing a daemon-reload once an enable changed links (the fake models
// it); the install reloads after it enables, a rerun leaves nothing
// pending, and a rerun after a run that enabled without reloading
// reloads. An older manager reports nothing pending and is not reloaded
// after the enable.
func TestNoReloadLeftPending(t *testing.T) {
	t.Parallel()
	unit := layout.UnitName(generationtest.InstallationID)
	pending := func(t *testing.T, f *runFixture) bool {
		t.Helper()
		st, err := f.systemd.State(context.Background(), unit)
		if err != nil {
			t.Fatal(err)
		}
		return st.NeedDaemonReload
	}
	t.Run("systemd 257", func(t *testing.T) {
		f := newRunFixture(t)
		f.installed(t)
		calls := f.systemd.Calls()
		enable := slices.Index(calls, "enable "+unit)
		if enable < 0 || !slices.Contains(calls[enable:], "reload") {
			t.Errorf("no daemon-reload after the enable: %v", calls)
		}
		if pending(t, f) {
			t.Error("after the install the unit needs a daemon-reload")
		}
		n := len(f.systemd.Calls())
		if _, err := f.install(t, nil); err != nil {
			t.Fatalf("rerun: %v", err)
		}
		if slices.Contains(f.systemd.Calls()[n:], "reload") || pending(t, f) {
			t.Errorf("the rerun reloaded or left a reload pending: %v", f.systemd.Calls()[n:])
		}
		// An earlier run enabled (links changed) and ended before its
		// reload: the rerun reloads.
		ctx := context.Background()
		if err := f.systemd.Disable(ctx, unit); err != nil {
			t.Fatal(err)
		}
		if err := f.systemd.Enable(ctx, unit); err != nil {
			t.Fatal(err)
		}
		if !pending(t, f) {
			t.Fatal("the fake does not report the pending reload")
		}
		n = len(f.systemd.Calls())
		rep, err := f.install(t, nil)
		if err != nil || rep.Condition != workflow.Complete {
			t.Fatalf("rerun after an enable without reload: %v", err)
		}
		if !slices.Contains(f.systemd.Calls()[n:], "reload") || pending(t, f) {
			t.Errorf("the rerun left the reload pending: %v", f.systemd.Calls()[n:])
		}
	})
	t.Run("systemd 252", func(t *testing.T) {
		f := newRunFixture(t)
		f.systemd.SetVersion("252.30-1~deb12u2")
		f.installed(t)
		calls := f.systemd.Calls()
		enable := slices.Index(calls, "enable "+unit)
		if enable < 0 || slices.Contains(calls[enable:], "reload") {
			t.Errorf("calls %v: want an enable and no reload after it", calls)
		}
		if pending(t, f) {
			t.Error("after the install the unit needs a daemon-reload")
		}
	})
}
