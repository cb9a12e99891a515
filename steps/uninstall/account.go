package uninstall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/accounts"
	"github.com/openagentcore/oac-node-install/steps/generation"
	"github.com/openagentcore/oac-node-install/steps/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// FactAccountKept says why the account stays for a rerun: "process" (a
// process still runs as it) or "store" (a microsandbox store was kept).
const FactAccountKept = "account_kept"

// accountStep handles the oac-node account by the bookkeeping: while
// other nodes remain it keeps everything; while a process still runs as
// the account, or a microsandbox store was kept, it keeps the account for
// a rerun; else an account the installer created is deleted with its
// home, and an adopted one loses only the groups the installer added and
// regains its recorded home mode. Each action is idempotent, so the
// Verify policy reruns it.
type accountStep struct{ e *Env }

func (s accountStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	e, id := s.e, s.e.Opts.InstallationID
	if _, err := os.Lstat(e.HostPaths.Bookkeeping()); errors.Is(err, os.ErrNotExist) {
		return workflow.Result{Event: workflow.EventAccountHandled}, nil
	}
	db, err := e.Bookkeeping()
	if err != nil {
		return workflow.Result{}, err
	}
	defer db.Close()
	rec, ok, err := db.Account()
	if err != nil || !ok {
		return workflow.Result{Event: workflow.EventAccountHandled}, err
	}
	insts, err := db.ListInstallations()
	if err != nil {
		return workflow.Result{}, err
	}
	if slices.ContainsFunc(insts, func(i bookkeeping.Installation) bool { return i.ID != id }) {
		e.Printf("keep the account %s: other nodes on this host use it", layout.Account)
		return workflow.Result{Event: workflow.EventAccountHandled}, nil
	}
	u, err := e.DBs.LookupUser(layout.Account)
	exists := err == nil
	if err != nil && !errors.Is(err, accounts.ErrNotFound) {
		return workflow.Result{}, fmt.Errorf("the service account: %w", err)
	}
	rerun := fmt.Sprintf("sudo oac-node-install --uninstall --installation-id %s --force", id)
	if exists {
		running, err := e.Running(u.UID)
		if err != nil {
			return workflow.Result{}, err
		}
		if running {
			e.Printf("keep the account %s: a process still runs as it (see `pgrep -u %s`); once it has ended, rerun `%s`", layout.Account, layout.Account, rerun)
			return kept("process"), nil
		}
		if facts[generation.FactStoresKept] != "" {
			e.Printf("keep the account %s and its home: they hold the kept microsandbox store; once it is removed, rerun `%s`", layout.Account, rerun)
			return kept("store"), nil
		}
	}
	if rec.Created {
		if exists {
			e.Printf("remove the account %s", layout.Account)
			if err := e.Adapter.DeleteServiceAccount(ctx); err != nil && !errors.Is(err, accounts.ErrNotFound) {
				return workflow.Result{}, err
			}
		}
		if err := generation.RemoveTree(e.HostPaths.Home()); err != nil {
			return workflow.Result{}, fmt.Errorf("remove the account's home: %w", err)
		}
	} else if exists {
		if err := s.restoreAdopted(ctx, db, rec); err != nil {
			return workflow.Result{}, err
		}
	}
	// Before the records of what to undo go: the change an earlier run
	// made (userdel, gpasswd) may not be durable yet.
	if err := e.DBs.Sync(); err != nil {
		return workflow.Result{}, err
	}
	groups, err := db.Groups()
	if err != nil {
		return workflow.Result{}, err
	}
	for _, g := range groups {
		if err := db.RemoveGroup(g.Name); err != nil {
			return workflow.Result{}, err
		}
	}
	return workflow.Result{Event: workflow.EventAccountHandled}, db.DeleteAccount()
}

func kept(why string) workflow.Result {
	return workflow.Result{Event: workflow.EventAccountHandled, Facts: map[string]string{FactAccountKept: why}}
}

// restoreAdopted removes the adopted account from the groups the
// installer added and restores its home's recorded mode.
func (s accountStep) restoreAdopted(ctx context.Context, db *bookkeeping.DB, rec bookkeeping.Account) error {
	e := s.e
	e.Printf("keep the adopted account %s; remove only the groups the installer added", layout.Account)
	groups, err := db.Groups()
	if err != nil {
		return err
	}
	member, err := e.DBs.GroupNames(layout.Account)
	if err != nil {
		return err
	}
	for _, g := range groups {
		if slices.Contains(member, g.Name) {
			e.Printf("remove %s from the group %s", layout.Account, g.Name)
			if err := e.Adapter.RemoveFromGroup(ctx, g.Name); err != nil {
				return err
			}
		}
	}
	if rec.HomeMode == nil {
		return nil
	}
	home := e.HostPaths.Home()
	err = safefile.SetDir(home, -1, -1, *rec.HomeMode)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the account's home: %w", err)
	}
	return nil
}

// Verify reruns the step: every action in it is idempotent.
func (s accountStep) Verify(ctx context.Context, facts workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	res, err := s.Run(ctx, facts)
	if err != nil {
		return workflow.Unknown, workflow.Result{}, err
	}
	return workflow.Done, res, nil
}
