package systemd_test

import (
	"context"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/host/systemd/systemdtest"
)

func TestLastExit(t *testing.T) {
	for _, tc := range []struct {
		p    systemd.UnitProperties
		want string
	}{
		{systemd.UnitProperties{}, ""},
		{systemd.UnitProperties{ExecMainCode: systemd.CodeExited, ExecMainStatus: 78}, "exited with status 78"},
		{systemd.UnitProperties{ExecMainCode: systemd.CodeKilled, ExecMainStatus: 9}, "killed by signal 9"},
		{systemd.UnitProperties{ExecMainCode: systemd.CodeDumped, ExecMainStatus: 11}, "dumped core (signal 11)"},
	} {
		if got := tc.p.LastExit(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}

func TestFakeProperties(t *testing.T) {
	ctx := context.Background()
	f := systemdtest.New("")
	const unit = "oac-node-x.service"
	if p, err := f.Properties(ctx, unit); err != nil || p.LoadState != "not-found" || p.ActiveState != "inactive" {
		t.Fatalf("an unknown unit: %+v %v", p, err)
	}
	f.Add(unit)
	if err := f.Start(ctx, unit); err != nil {
		t.Fatal(err)
	}
	if p, _ := f.Properties(ctx, unit); p.LoadState != "loaded" || p.ActiveState != "active" || p.SubState != "running" || p.Result != "success" {
		t.Errorf("a started unit: %+v", p)
	}
	f.SetProperties(unit, systemd.UnitProperties{ActiveState: "failed", SubState: "failed", Result: "exit-code",
		NRestarts: 3, ExecMainCode: systemd.CodeExited, ExecMainStatus: 78})
	p, _ := f.Properties(ctx, unit)
	if p.LoadState != "loaded" || p.Result != "exit-code" || p.NRestarts != 3 || p.LastExit() != "exited with status 78" {
		t.Errorf("a failed unit: %+v", p)
	}
	if st, _ := f.State(ctx, unit); st.ActiveState != "failed" {
		t.Errorf("State disagrees with Properties: %+v", st)
	}
}
