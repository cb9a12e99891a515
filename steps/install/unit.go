package install

import (
	"bytes"
	"context"
	"os"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/workflow"
)

// unitStep writes the node's unit (0644), recorded first in the
// bookkeeping, and reloads systemd when systemd has not loaded the unit
// from that file (a new unit, a changed one, or an earlier run's write
// whose reload did not happen).
type unitStep struct{ d Data }

func (s unitStep) unit() systemd.Unit {
	o := s.d.Options()
	return systemd.Unit{InstallationID: o.InstallationID, Provider: s.d.Configuration().Provider, NodeRoot: s.d.Host().NodeRoot(o.InstallationID)}
}

func (s unitStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	d, id := s.d, s.d.Options().InstallationID
	text, err := s.unit().Render()
	if err != nil {
		return workflow.Result{}, workflow.Unchanged(err)
	}
	path := d.Host().Unit(id)
	old, rerr := os.ReadFile(path)
	facts := map[string]string{}
	if rerr == nil && bytes.Equal(old, text) {
		if err := durable(path); err != nil { // an earlier run's write may not be
			return workflow.Result{}, err
		}
	} else {
		db, err := openBookkeeping(d)
		if err != nil {
			return workflow.Result{}, err
		}
		err = db.AddFile(bookkeeping.File{Path: path, InstallationID: id, Kind: bookkeeping.FileUnit})
		db.Close()
		if err != nil {
			return workflow.Result{}, err
		}
		if err := safefile.AtomicWrite(path, text, 0o644); err != nil {
			return workflow.Result{}, err
		}
		facts[factRestart] = "true"
	}
	// systemd rereads every unit file on a daemon-reload: only when it
	// has not loaded this unit from the file now on disk.
	reloaded, err := systemd.ReloadIfNeeded(ctx, d.Systemd(), s.unit().Name())
	if reloaded {
		d.Printf("reload systemd")
	}
	return workflow.Result{Facts: facts}, err
}

// Check: the unit file holds the text the step writes, and is recorded.
func (s unitStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	d, id := s.d, s.d.Options().InstallationID
	text, err := s.unit().Render()
	if err != nil {
		return 0, workflow.Result{}, workflow.Unchanged(err)
	}
	return checkWritten(d.Host(), id, d.Host().Unit(id), text)
}
