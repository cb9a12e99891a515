package install

import (
	"bytes"
	"context"
	"errors"
	"os"

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

// Check: the env file is there with the run's proxy settings (and
// recorded), or absent when the run has none.
func (s envFileStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	d, id := s.d, s.d.Options().InstallationID
	path := d.Host().EnvFile(id)
	text, write, err := systemd.RenderEnvFile(d.Proxy())
	if err != nil {
		return 0, workflow.Result{}, workflow.Unchanged(err)
	}
	if !write {
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			return done, workflow.Result{}, nil
		}
		return notDone, workflow.Result{}, nil
	}
	return checkWritten(d.Host(), id, path, text)
}
