package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/workflow"
)

// factRestart is set when the run changed the env file or the unit, so the
// start step restarts a running unit.
const factRestart = "restart"

// envFileStep writes /etc/oac-node/<id>.env (0600) with the run's proxy
// settings, or removes it when the run has none. The bookkeeping records
// the file before it is written. Proxy values are never printed.
type envFileStep struct{ d Data }

func (s envFileStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	d, id := s.d, s.d.Options().InstallationID
	// The first root step after register: root records in its own
	// bookkeeping that the node registered (Core enrolled it), which a
	// later run decides from.
	if err := markRegistered(d); err != nil {
		return workflow.Result{}, err
	}
	path := d.Host().EnvFile(id)
	text, write, err := systemd.RenderEnvFile(d.Proxy())
	if err != nil {
		return workflow.Result{}, workflow.Unchanged(err)
	}
	if !write {
		// The directory is fsynced also when the file is already gone:
		// an earlier run's removal may not be durable.
		if err := safefile.Remove(path); errors.Is(err, os.ErrNotExist) {
			return workflow.Result{}, nil
		} else if err != nil {
			return workflow.Result{}, err
		}
		return workflow.Result{Facts: map[string]string{factRestart: "true"}}, nil
	}
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, text) {
		return workflow.Result{}, durable(path) // an earlier run's write may not be
	}
	db, err := openBookkeeping(d)
	if err != nil {
		return workflow.Result{}, err
	}
	defer db.Close()
	if err := db.AddFile(bookkeeping.File{Path: path, InstallationID: id, Kind: bookkeeping.FileEnv}); err != nil {
		return workflow.Result{}, err
	}
	d.Printf("write the proxy settings for the service")
	return workflow.Result{Facts: map[string]string{factRestart: "true"}}, safefile.AtomicWrite(path, text, 0o600)
}

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

// durable makes root's file p, found holding the bytes it should, and its
// name durable.
func durable(p string) error {
	return safefile.DurablePath(p, safefile.Expect{UID: safefile.AnyUID})
}

// ActiveTimeout bounds the wait for the unit to become active.
var ActiveTimeout = 30 * time.Second

// startStep enables and starts the unit (restarting it when this run
// changed its unit or env file) and waits until systemd reports it active.
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
