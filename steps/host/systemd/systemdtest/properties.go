package systemdtest

import (
	"context"

	"github.com/openagentcore/oac-node-install/steps/host/systemd"
)

// SetProperties sets what Properties reports of a unit: its state as Set
// does (LoadState is kept), and its Result and ExecMainCode.
func (f *Fake) SetProperties(name string, p systemd.UnitProperties) {
	f.Set(name, systemd.UnitState{ActiveState: p.ActiveState, SubState: p.SubState, NRestarts: p.NRestarts, ExecMainStatus: p.ExecMainStatus})
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.props == nil {
		f.props = map[string]systemd.UnitProperties{}
	}
	f.props[name] = p
}

// Properties reports the unit's state; Result is "success" and
// ExecMainCode 0 unless SetProperties set them, UnitFileState "enabled"
// for a unit enabled and "" for another, unless SetProperties set it. Its verb for Fail is
// "properties".
func (f *Fake) Properties(_ context.Context, name string) (systemd.UnitProperties, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("properties", name); err != nil {
		return systemd.UnitProperties{}, err
	}
	st := f.get(name).state
	p := systemd.UnitProperties{LoadState: st.LoadState, ActiveState: st.ActiveState, SubState: st.SubState,
		Result: "success", NRestarts: st.NRestarts, ExecMainStatus: st.ExecMainStatus}
	if f.get(name).enabled {
		p.UnitFileState = "enabled"
	}
	if set, ok := f.props[name]; ok {
		p.Result, p.ExecMainCode = set.Result, set.ExecMainCode
		if set.UnitFileState != "" {
			p.UnitFileState = set.UnitFileState
		}
	}
	return p, nil
}
