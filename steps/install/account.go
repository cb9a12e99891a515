package install

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/accounts"
	"github.com/openagentcore/oac-node-install/steps/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// accountStep creates the oac-node account (useradd --system, no home
// created, a nologin shell), then its home 0700 oac-node:oac-node; or
// adopts an existing account by the adoption rules, recording the home's
// mode before setting it to 0700. The bookkeeping records the intent
// (created: true) before useradd runs, so a rerun always knows whether the
// installer made the account.
type accountStep struct{ d Data }

const factUID = "uid"

func (s accountStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	db, err := openBookkeeping(s.d)
	if err != nil {
		return workflow.Result{}, err
	}
	defer db.Close()
	rec, recorded, err := db.Account()
	if err != nil {
		return workflow.Result{}, err
	}
	home := s.d.Host().Home()
	facts, err := adoptionFacts(s.d.Databases(), home, rec, recorded)
	if err != nil {
		return workflow.Result{}, err
	}
	decision, err := accounts.Decide(facts)
	if err != nil {
		return workflow.Result{}, workflow.Unchanged(err)
	}
	switch decision {
	case accounts.Create:
		if err := db.PutAccount(bookkeeping.Account{Name: layout.Account, Created: true}); err != nil {
			return workflow.Result{}, err
		}
		shell, err := accounts.FindNologin()
		if err != nil {
			return workflow.Result{}, err
		}
		s.d.Printf("create the account %s", layout.Account)
		if err := s.d.Accounts().CreateServiceAccount(ctx, shell); err != nil {
			return workflow.Result{}, err
		}
		return s.created(db)
	default:
		if recorded && rec.Created {
			return s.created(db) // created by an earlier run
		}
		if !recorded {
			fi, err := os.Lstat(home)
			if err != nil {
				return workflow.Result{}, fmt.Errorf("the adopted account's home %s: %w", home, err)
			}
			mode := fi.Mode().Perm()
			if err := db.PutAccount(bookkeeping.Account{Name: layout.Account, Created: false, UID: facts.User.UID, HomeMode: &mode}); err != nil {
				return workflow.Result{}, err
			}
			s.d.Printf("adopt the existing account %s", layout.Account)
		}
		u := facts.User
		if err := ensureHome(home, u.UID, u.GID); err != nil {
			return workflow.Result{}, err
		}
		return workflow.Result{Facts: map[string]string{factUID: fmt.Sprint(u.UID)}}, nil
	}
}

// adoptionFacts are the adoption rules' facts of the host's account and
// home, given the bookkeeping's account record (when recorded).
func adoptionFacts(dbs accounts.Databases, home string, rec bookkeeping.Account, recorded bool) (accounts.Facts, error) {
	recordedUID := -1
	if recorded && rec.UID > 0 {
		recordedUID = rec.UID
	}
	facts, err := dbs.Facts(home, recordedUID)
	if err != nil {
		return facts, err
	}
	if facts.User == nil && recorded && rec.Created {
		facts.HomeExists = false // the home an interrupted creation made is ours
	}
	return facts, nil
}

// created completes a creation: the databases made durable (an earlier
// run's useradd may not be), the uid recorded and the home made.
func (s accountStep) created(db *bookkeeping.DB) (workflow.Result, error) {
	u, err := s.d.Databases().LookupUser(layout.Account)
	if err != nil {
		return workflow.Result{}, fmt.Errorf("after useradd: %w", err)
	}
	if err := s.d.Databases().Sync(); err != nil {
		return workflow.Result{}, err
	}
	if err := db.PutAccount(bookkeeping.Account{Name: layout.Account, Created: true, UID: u.UID}); err != nil {
		return workflow.Result{}, err
	}
	if err := ensureHome(s.d.Host().Home(), u.UID, u.GID); err != nil {
		return workflow.Result{}, err
	}
	return workflow.Result{Facts: map[string]string{factUID: fmt.Sprint(u.UID)}}, nil
}

// Verify: the account exists and the bookkeeping records it (done, with
// the home completed), or the account does not exist (not done).
func (s accountStep) Verify(ctx context.Context, facts workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	_, err := s.d.Databases().LookupUser(layout.Account)
	if errors.Is(err, accounts.ErrNotFound) {
		return workflow.NotDone, workflow.Result{}, nil
	}
	if err != nil {
		return workflow.Unknown, workflow.Result{}, err
	}
	db, err := openBookkeeping(s.d)
	if err != nil {
		return workflow.Unknown, workflow.Result{}, err
	}
	defer db.Close()
	if _, ok, err := db.Account(); err != nil || !ok {
		return workflow.Unknown, workflow.Result{}, errors.Join(err, errors.New("the account exists but the bookkeeping does not say who made it"))
	}
	db.Close()
	res, err := s.Run(ctx, facts)
	if err != nil {
		return workflow.Unknown, workflow.Result{}, err
	}
	return workflow.Done, res, nil
}

// ensureHome makes the account's home a 0700 directory of the account
// (creating it when missing); it never follows a link. The home and its
// name in /var/lib are made durable.
func ensureHome(home string, uid, gid int) error {
	if err := os.Mkdir(home, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create %s: %w", home, err)
	}
	if err := safefile.SetDir(home, uid, gid, 0o700); err != nil {
		return err
	}
	return syncDir(filepath.Dir(home))
}

// groupStep adds the account to the provider's device group (docker or
// kvm, nothing else), recording the addition before usermod runs.
type groupStep struct{ d Data }

func (s groupStep) group() string {
	if s.d.Configuration().Provider == "microsandbox" {
		return "kvm"
	}
	return "docker"
}

func (s groupStep) member() (bool, error) {
	names, err := s.d.Databases().GroupNames(layout.Account)
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if n == s.group() {
			return true, nil
		}
	}
	return false, nil
}

func (s groupStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	in, err := s.member()
	if err != nil {
		return workflow.Result{}, err
	}
	if in {
		return workflow.Result{}, s.d.Databases().Sync() // an earlier run's usermod may not be durable
	}
	db, err := openBookkeeping(s.d)
	if err != nil {
		return workflow.Result{}, err
	}
	defer db.Close()
	if err := db.AddGroup(s.group()); err != nil {
		return workflow.Result{}, err
	}
	s.d.Printf("add %s to the group %s", layout.Account, s.group())
	return workflow.Result{}, s.d.Accounts().AddToGroup(ctx, s.group())
}

// Verify: the account is in the group (done) or not (not done).
func (s groupStep) Verify(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	in, err := s.member()
	switch {
	case err != nil:
		return workflow.Unknown, workflow.Result{}, err
	case in:
		if err := s.d.Databases().Sync(); err != nil { // an earlier run's usermod may not be durable
			return workflow.Unknown, workflow.Result{}, err
		}
		return workflow.Done, workflow.Result{}, nil
	}
	return workflow.NotDone, workflow.Result{}, nil
}
