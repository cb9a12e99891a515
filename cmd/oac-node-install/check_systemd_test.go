package main

import (
	"context"
	"errors"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/host/systemd/systemdtest"
)

// TestCheckSystemdNamesTheWayAndVersion: check's line names how systemd
// answered (the system bus, or its private socket when there is no bus)
// and its version, and fails a systemd older than the unit needs, naming
// both versions.
func TestCheckSystemdNamesTheWayAndVersion(t *testing.T) {
	ctx := context.Background()
	m := systemdtest.New("")
	for _, tc := range []struct {
		version, via, result, text string
	}{
		{"252.30-1~deb12u2", "system bus", "ok", "systemd 252.30-1~deb12u2 on the system bus"},
		{"257.9-1", "/run/systemd/private", "ok", "systemd 257.9-1 on its private socket /run/systemd/private (no system bus)"},
		{"239", "system bus", "FAIL", "systemd on the system bus: this host runs systemd 239; the node's unit needs systemd 242 or later (Type=exec, the ExecStart= prefix \":\"). Use a host with systemd 242 or later."},
		{"v241-rc2", "/run/systemd/private", "FAIL", "systemd on its private socket /run/systemd/private (no system bus): this host runs systemd 241 (v241-rc2); the node's unit needs systemd 242 or later (Type=exec, the ExecStart= prefix \":\"). Use a host with systemd 242 or later."},
	} {
		m.SetVersion(tc.version)
		ch := systemdCheckOf(ctx, m, tc.via)
		if tc.result == "FAIL" && !errors.Is(ch.Err, systemd.ErrTooOld) {
			t.Errorf("%s: %v, want ErrTooOld", tc.version, ch.Err)
		}
		if result, text := checkText(ch); result != tc.result || text != tc.text {
			t.Errorf("%s over %s:\n got %s %s\nwant %s %s", tc.version, tc.via, result, text, tc.result, tc.text)
		}
	}
	m.Fail("version", "", errors.New("no answer"))
	if ch := systemdCheckOf(ctx, m, "system bus"); !ch.Failed() {
		t.Error("a manager that does not say its version passed")
	}
}
