package uninstall

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/workflow"
)

// bookkeepingStep removes the installation's bookkeeping entry and
// /etc/oac-node/<id>.json; when no node remains, the command on the host
// (/usr/local/sbin/oac-node-install) it recorded; when, besides, the
// account step kept nothing, also /run/oac-node-docker, installer.db and
// /etc/oac-node.
// /run/oac-node.lock stays.
type bookkeepingStep struct{ e *Env }

func (s bookkeepingStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	e, id := s.e, s.e.Opts.InstallationID
	e.final = maps.Clone(facts)
	rec := e.HostPaths.Record(id)
	if err := removeFile(rec); err != nil {
		return workflow.Result{}, err
	}
	if _, err := os.Lstat(e.HostPaths.Bookkeeping()); err == nil {
		last, err := s.forget()
		if err != nil {
			return workflow.Result{}, err
		}
		if !last || facts[FactAccountKept] != "" {
			return workflow.Result{Event: workflow.EventRecordsRemoved}, nil
		}
		if err := removeFile(e.HostPaths.Bookkeeping()); err != nil {
			return workflow.Result{}, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return workflow.Result{}, err
	}
	if err := safefile.RemoveTree(e.HostPaths.DockerConfig()); err != nil {
		return workflow.Result{}, err
	}
	etc := e.HostPaths.EtcDir()
	if err := os.Remove(etc); err != nil && !errors.Is(err, os.ErrNotExist) {
		e.Printf("keep %s: %v", etc, err)
		return workflow.Result{Event: workflow.EventRecordsRemoved}, nil
	}
	return workflow.Result{Event: workflow.EventRecordsRemoved}, safefile.SyncDir(filepath.Dir(etc))
}

// forget removes the installation's entries from the bookkeeping and
// reports whether no installation and no account remain in it.
func (s bookkeepingStep) forget() (bool, error) {
	e, id := s.e, s.e.Opts.InstallationID
	db, err := e.Bookkeeping()
	if err != nil {
		return false, err
	}
	defer db.Close()
	if err := db.RemoveFile(e.HostPaths.Record(id)); err != nil {
		return false, err
	}
	files, err := db.Files(id)
	if err != nil {
		return false, err
	}
	for _, f := range files {
		if err := removeFile(f.Path); err != nil {
			return false, err
		}
		if err := db.RemoveFile(f.Path); err != nil {
			return false, err
		}
	}
	nets, err := db.Networks(id)
	if err != nil {
		return false, err
	}
	for _, n := range nets {
		if err := db.RemoveNetwork(n.Name); err != nil {
			return false, err
		}
	}
	if err := db.DeleteInstallation(id); err != nil {
		return false, err
	}
	insts, err := db.ListInstallations()
	if err != nil {
		return false, err
	}
	if len(insts) == 0 {
		// The last node is gone, and so is the command on the host
		// (CONTRACT §10, "The command on the host").
		if err := install.RemoveCommand(db, e.printer()); err != nil {
			return false, err
		}
	}
	_, acct, err := db.Account()
	if err != nil {
		return false, err
	}
	if len(insts) > 0 {
		return false, nil
	}
	return !acct, nil
}
