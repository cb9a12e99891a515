package uninstall

import (
	"context"
	"errors"
	"os"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// removeUnitStep removes the unit file and the env file, reloads systemd
// and resets the unit's failed state (best effort). The files' bookkeeping
// entries go after the files.
type removeUnitStep struct{ e *Env }

func (s removeUnitStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	e, id := s.e, s.e.Opts.InstallationID
	paths := []string{e.HostPaths.Unit(id), e.HostPaths.EnvFile(id)}
	for _, p := range paths {
		if err := removeFile(p); err != nil {
			return workflow.Result{}, err
		}
	}
	if err := forgetFiles(e, paths...); err != nil {
		return workflow.Result{}, err
	}
	e.Printf("reload systemd")
	if err := e.Manager.Reload(ctx); err != nil {
		return workflow.Result{}, err
	}
	_ = e.Manager.ResetFailed(ctx, layout.UnitName(id)) // best effort
	return workflow.Result{Event: workflow.EventUnitRemoved}, nil
}

// removeFile unlinks p (a link itself, never its target) and the
// temporary file an install killed while writing p left beside it, and
// fsyncs their directory, also when they are already gone (an earlier
// run's removal may not be durable); a missing file is no error, nor a
// missing directory (an install killed before it made /etc/oac-node, or an
// earlier run of the records step that removed it).
func removeFile(p string) error {
	if err := safefile.RemoveWritten(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// forgetFiles drops the bookkeeping entries of paths, when the
// bookkeeping exists.
func forgetFiles(e *Env, paths ...string) error {
	if _, err := os.Lstat(e.HostPaths.Bookkeeping()); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	db, err := e.Bookkeeping()
	if err != nil {
		return err
	}
	defer db.Close()
	for _, p := range paths {
		if err := db.RemoveFile(p); err != nil {
			return err
		}
	}
	return nil
}
