package systemd_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/host/systemd/systemdtest"
)

const unitName = "oac-node-0f6e8c2a-3b1d-4e5f-9a7b-1c2d3e4f5a6b.service"

func TestFakeFollowsUnitFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f := systemdtest.New(dir)
	if err := f.Enable(ctx, unitName); !errors.Is(err, systemd.ErrNoSuchUnit) {
		t.Fatalf("enable before the file exists: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, unitName), []byte("[Service]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Start(ctx, unitName); !errors.Is(err, systemd.ErrNoSuchUnit) {
		t.Fatalf("start before daemon-reload: %v", err)
	}
	for _, step := range []func(context.Context, string) error{
		func(ctx context.Context, _ string) error { return f.Reload(ctx) }, f.Enable, f.Start,
	} {
		if err := step(ctx, unitName); err != nil {
			t.Fatal(err)
		}
	}
	st, err := f.State(ctx, unitName)
	if err != nil || st.LoadState != "loaded" || st.ActiveState != "active" || !f.Enabled(unitName) {
		t.Fatalf("after start: %v %v enabled=%v", st, err, f.Enabled(unitName))
	}
	for _, step := range []func(context.Context, string) error{f.Stop, f.Disable, f.ResetFailed} {
		if err := step(ctx, unitName); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(dir, unitName)); err != nil {
		t.Fatal(err)
	}
	if err := f.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.ResetFailed(ctx, unitName); !errors.Is(err, systemd.ErrNoSuchUnit) {
		t.Fatalf("reset-failed of a removed unit: %v", err)
	}
	st, _ = f.State(ctx, unitName)
	if st.LoadState != "not-found" || st.ActiveState != "inactive" {
		t.Fatalf("removed unit: %v", st)
	}
	want := []string{"enable " + unitName, "start " + unitName, "reload", "enable " + unitName, "start " + unitName,
		"state " + unitName, "stop " + unitName, "disable " + unitName, "reset-failed " + unitName, "reload",
		"reset-failed " + unitName, "state " + unitName}
	if got := f.Calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls:\n%q\nwant\n%q", got, want)
	}
	injected := errors.New("bus went away")
	f.Fail("stop", unitName, injected)
	if err := f.Stop(ctx, unitName); !errors.Is(err, injected) {
		t.Fatalf("injected failure: %v", err)
	}
	f.Close()
	if err := f.Reload(ctx); !errors.Is(err, systemdtest.ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
}

func TestWaitActive(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		states  []systemd.UnitState // successive states; the last one repeats
		timeout time.Duration
		wantErr error
		wantAct string
	}{
		{"already active", []systemd.UnitState{{ActiveState: "active", SubState: "running"}}, time.Hour, nil, "active"},
		{"activating then active", []systemd.UnitState{{ActiveState: "activating", SubState: "start"}, {ActiveState: "activating", SubState: "auto-restart", NRestarts: 1}, {ActiveState: "active", SubState: "running", NRestarts: 1}}, time.Hour, nil, "active"},
		{"failed", []systemd.UnitState{{ActiveState: "activating"}, {ActiveState: "failed", SubState: "failed", ExecMainStatus: 78}}, time.Hour, systemd.ErrNotActive, "failed"},
		{"never active", []systemd.UnitState{{ActiveState: "activating", SubState: "auto-restart"}}, 20 * time.Millisecond, systemd.ErrNotActive, "activating"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := systemdtest.New("")
			f.Add(unitName)
			m := &sequence{Fake: f, states: tc.states}
			st, err := systemd.WaitActive(ctx, m, unitName, tc.timeout, time.Millisecond)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if st.ActiveState != tc.wantAct {
				t.Fatalf("last state %v, want %s", st, tc.wantAct)
			}
		})
	}
	t.Run("context ends first", func(t *testing.T) {
		f := systemdtest.New("")
		f.Add(unitName)
		ctx, cancel := context.WithCancel(ctx)
		cancel()
		m := &sequence{Fake: f, states: []systemd.UnitState{{ActiveState: "activating"}}}
		if _, err := systemd.WaitActive(ctx, m, unitName, time.Hour, time.Hour); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("state fails", func(t *testing.T) {
		f := systemdtest.New("")
		injected := errors.New("bus went away")
		f.Fail("state", unitName, injected)
		if _, err := systemd.WaitActive(ctx, f, unitName, time.Hour, time.Millisecond); !errors.Is(err, injected) {
			t.Fatalf("err = %v", err)
		}
	})
}

// sequence sets the fake's unit to the next state before each read.
type sequence struct {
	*systemdtest.Fake
	states []systemd.UnitState
}

func (s *sequence) State(ctx context.Context, unit string) (systemd.UnitState, error) {
	s.Set(unit, s.states[0])
	if len(s.states) > 1 {
		s.states = s.states[1:]
	}
	return s.Fake.State(ctx, unit)
}
