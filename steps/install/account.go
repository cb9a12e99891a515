package install

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
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
	if err := checkRecorded(s.d.Databases(), rec, recorded, s.d.Options().InstallationID); err != nil {
		return workflow.Result{}, workflow.Unchanged(err)
	}
	home := s.d.Host().Home()
	facts, err := adoptionFacts(s.d.Databases(), home, rec, recorded)
	if err != nil {
		return workflow.Result{}, err
	}
	if halfMade(rec, recorded, facts) {
		s.d.Printf("remove the account %s that an earlier run's useradd left without its group, to create it anew", layout.Account)
		if err := s.d.Accounts().DeleteServiceAccount(ctx); err != nil && !errors.Is(err, accounts.ErrNotFound) {
			return workflow.Result{}, err
		}
		if facts, err = adoptionFacts(s.d.Databases(), home, rec, recorded); err != nil {
			return workflow.Result{}, err
		}
	}
	decision, err := accounts.Decide(facts)
	if err != nil {
		return workflow.Result{}, workflow.Unchanged(workflow.Refuse(err))
	}
	switch decision {
	case accounts.Create:
		if _, err := s.d.Databases().LookupGroup(layout.Account); err == nil {
			// Decide found no group of the name but ownGroup's.
			s.d.Printf("remove the group %s that an earlier run's useradd left without the account, to create both anew", layout.Account)
			if err := s.d.Accounts().DeleteServiceGroup(ctx); err != nil && !errors.Is(err, accounts.ErrNotFound) {
				return workflow.Result{}, err
			}
		}
		if err := db.PutAccount(bookkeeping.Account{Name: layout.Account, Created: true, NoGroupBefore: true}); err != nil {
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
		return s.created(ctx, db)
	default:
		if recorded && rec.Created {
			return s.created(ctx, db) // created by an earlier run
		}
		u := facts.User
		switch {
		case !recorded:
			fi, err := os.Lstat(home)
			if err != nil {
				return workflow.Result{}, fmt.Errorf("the adopted account's home %s: %w", home, err)
			}
			mode := fi.Mode().Perm()
			if err := db.PutAccount(bookkeeping.Account{Name: layout.Account, Created: false, UID: u.UID, GID: u.GID, HomeMode: &mode}); err != nil {
				return workflow.Result{}, err
			}
			s.d.Printf("adopt the existing account %s", layout.Account)
		case rec.GID == 0 && rec.UID == u.UID:
			// A record of an installer that did not record the gid: the
			// account with the recorded uid is the adopted one.
			rec.GID = u.GID
			if err := db.PutAccount(rec); err != nil {
				return workflow.Result{}, err
			}
		}
		if err := ensureHome(home, u.UID, u.GID); err != nil {
			return workflow.Result{}, err
		}
		return workflow.Result{Facts: map[string]string{factUID: fmt.Sprint(u.UID)}}, nil
	}
}

// RecordedAccount is the bookkeeping's account record as
// accounts.Recorded; ok is false without a record, and while a creation is
// only intended (useradd not known to have run: no uid recorded yet).
func RecordedAccount(rec bookkeeping.Account, recorded bool) (accounts.Recorded, bool) {
	if !recorded || rec.UID <= 0 {
		return accounts.Recorded{}, false
	}
	return accounts.Recorded{UID: rec.UID, GID: rec.GID, Created: rec.Created}, true
}

// AccountMismatch compares the host's account oac-node with the
// bookkeeping's record, reading both without a change: nil when they
// agree, or when the host has no bookkeeping or it records no account.
func AccountMismatch(h layout.Host) (*accounts.Mismatch, error) {
	db, ok, err := readBookkeeping(h)
	if err != nil || !ok {
		return nil, err
	}
	rec, recorded, err := db.Account()
	db.Close()
	if err != nil {
		return nil, err
	}
	r, ok := RecordedAccount(rec, recorded)
	if !ok {
		return nil, nil
	}
	return accounts.Under(h.Root).CheckRecorded(r)
}

// checkRecorded refuses, naming the recovery, when the host's account
// oac-node is not the one the bookkeeping records (rec, when recorded):
// gone, or made again with other ids. The node's files belong to the
// recorded uid, so the account is neither made again by useradd nor
// adopted (either would give the node's home to another uid).
func checkRecorded(dbs accounts.Databases, rec bookkeeping.Account, recorded bool, id ident.InstallationID) error {
	r, ok := RecordedAccount(rec, recorded)
	if !ok {
		return nil
	}
	m, err := dbs.CheckRecorded(r)
	if err != nil || m == nil {
		return err
	}
	return accountRefusal(m, id)
}

// accountRefusal is install's refusal of a mismatched account: give the
// account back its recorded ids when they are free, or remove the node
// (uninstall --force changes no account and keeps the home).
func accountRefusal(m *accounts.Mismatch, id ident.InstallationID) error {
	uninstall := fmt.Sprintf("`sudo oac-node-install --uninstall --installation-id %s --force`, which changes no account and %s", id, UninstallKeeps(m))
	if cmd := m.RecreateCommand(); cmd != "" {
		return workflow.Refuse(m.Refusal(fmt.Sprintf("Give the account back its recorded ids (%s), then run the command again; or remove the node in Web and run %s.", cmd, uninstall)))
	}
	return workflow.Refuse(m.Refusal(fmt.Sprintf("Remove the node in Web and run %s; then add the node again with a new command from Web.", uninstall)))
}

// UninstallKeeps says what uninstall --force does with the home when the
// account is not the recorded one (m): it removes an orphaned home
// (accounts.Mismatch.HomeOrphaned) and keeps any other for the operator.
func UninstallKeeps(m *accounts.Mismatch) string {
	home := layout.Default.Home()
	if m.HomeOrphaned() {
		return fmt.Sprintf("removes the home %s, whose uid no account holds", home)
	}
	return fmt.Sprintf("keeps %s for you to check and remove", home)
}

// CheckAccount refuses a command, before its first change, on a host whose
// account oac-node is not the one the bookkeeping records (deleted by
// hand, its uid perhaps another account's now; or deleted and made again
// with other ids), naming the recovery. It reads the bookkeeping
// read-only and the account databases; a host without either record
// passes. Install calls it under the host lock, before anything runs as
// the account.
func CheckAccount(h layout.Host, id ident.InstallationID) error {
	m, err := AccountMismatch(h)
	if err != nil {
		return workflow.Refuse(err)
	}
	if m == nil {
		return nil
	}
	return accountRefusal(m, id)
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
	if ownGroup(rec, recorded, facts) {
		facts.GroupExists = false // the account step removes it and makes both anew
	}
	return facts, nil
}

// halfMade reports whether the account is the installer's own, left
// half-made by a useradd cut off after it wrote /etc/passwd and before
// /etc/group (a full /etc): the bookkeeping recorded the creation before
// useradd ran (created, no uid yet: the adoption rules found no account
// then) and the account's primary gid names no group. Such an account is
// no foreign one to refuse; Run deletes it (userdel removes what useradd
// wrote to /etc/passwd and /etc/shadow) and creates it anew.
func halfMade(rec bookkeeping.Account, recorded bool, facts accounts.Facts) bool {
	return recorded && rec.Created && rec.UID <= 0 && facts.User != nil && facts.PrimaryGroup == ""
}

// ownGroup reports whether the group named oac-node, found with no
// account, is the installer's own: left by a useradd cut off after it
// wrote /etc/group, the bookkeeping having recorded the creation (no uid
// yet) while no such group existed.
func ownGroup(rec bookkeeping.Account, recorded bool, facts accounts.Facts) bool {
	return recorded && rec.Created && rec.UID <= 0 && rec.NoGroupBefore && facts.User == nil && facts.GroupExists
}

// created completes a creation: the databases made durable (an earlier
// run's useradd may not be), the uid recorded and the home made.
func (s accountStep) created(ctx context.Context, db *bookkeeping.DB) (workflow.Result, error) {
	u, err := s.d.Databases().LookupUser(layout.Account)
	if err != nil {
		return workflow.Result{}, fmt.Errorf("after useradd: %w", err)
	}
	if err := s.d.Databases().Sync(); err != nil {
		return workflow.Result{}, err
	}
	// A useradd cut off after it wrote /etc/group and before /etc/gshadow
	// (a full /etc) left the new group without its gshadow entry.
	g, err := s.d.Databases().GshadowOf(layout.Account)
	if err != nil {
		return workflow.Result{}, err
	}
	if g.LacksGroup(layout.Account) {
		s.d.Printf("give the group %s the /etc/gshadow entry an earlier run's useradd did not write", layout.Account)
		if err := s.d.Accounts().RestrictGroup(ctx); err != nil {
			return workflow.Result{}, err
		}
	}
	if err := db.PutAccount(bookkeeping.Account{Name: layout.Account, Created: true, UID: u.UID, GID: u.GID}); err != nil {
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

// Check refuses an account that is not the recorded one and applies the
// adoption rules as Run does (an account or home that cannot be adopted
// refuses); done when the account exists, the bookkeeping says who made
// it and its home is 0700 and the account's.
func (s accountStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	db, ok, err := readBookkeeping(s.d.Host())
	if err != nil {
		return 0, workflow.Result{}, err
	}
	var rec bookkeeping.Account
	recorded := false
	if ok {
		rec, recorded, err = db.Account()
		db.Close()
		if err != nil {
			return 0, workflow.Result{}, err
		}
	}
	if err := checkRecorded(s.d.Databases(), rec, recorded, s.d.Options().InstallationID); err != nil {
		return 0, workflow.Result{}, workflow.Unchanged(err)
	}
	home := s.d.Host().Home()
	facts, err := adoptionFacts(s.d.Databases(), home, rec, recorded)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	if halfMade(rec, recorded, facts) {
		return notDone, workflow.Result{}, nil // Run makes it anew
	}
	decision, err := accounts.Decide(facts)
	if err != nil {
		return 0, workflow.Result{}, workflow.Unchanged(workflow.Refuse(err))
	}
	if decision == accounts.Create || !recorded || facts.User == nil || (rec.Created && rec.UID != facts.User.UID) {
		return notDone, workflow.Result{}, nil
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(home, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR || st.Mode&0o7777 != 0o700 ||
		int(st.Uid) != facts.User.UID || int(st.Gid) != facts.User.GID {
		return notDone, workflow.Result{}, nil
	}
	if rec.Created {
		if g, err := s.d.Databases().GshadowOf(layout.Account); err != nil || g.LacksGroup(layout.Account) {
			return notDone, workflow.Result{}, err
		}
	}
	return done, workflow.Result{Facts: map[string]string{factUID: fmt.Sprint(facts.User.UID)}}, nil
}

// Child implements asaccount.Data. Once the run holds the host lock and
// changes the host, a home the recorded account lost (removed by hand, or
// never made by a run a full /etc stopped) is made again before anything
// runs as the account: every node root lives there, and the account cannot
// make it in /var/lib itself. The checks before run as the account in /
// and find the node root missing.
func (e *Env) Child() asaccount.Runner {
	if !e.Locked || e.Runner == nil {
		return e.Runner
	}
	return func(ctx context.Context, req asaccount.Request) (asaccount.Answer, error) {
		if err := homeAgain(e); err != nil {
			return asaccount.Answer{}, err
		}
		return e.Runner(ctx, req)
	}
}

// homeAgain makes the account's home again, 0700 and the account's, when
// it is missing and the bookkeeping records the account with the uid it
// has. That holds for an adopted account too: the installer set its home
// to 0700 and records the mode it had, which uninstall gives back; the
// node root it holds is the installer's. Without such a record the
// account step decides.
func homeAgain(e *Env) error {
	home := e.Host().Home()
	if _, err := os.Lstat(home); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	db, ok, err := readBookkeeping(e.Host())
	if err != nil || !ok {
		return err
	}
	rec, recorded, err := db.Account()
	db.Close()
	if err != nil || !recorded || rec.UID <= 0 {
		return err
	}
	u, err := e.Databases().LookupUser(layout.Account)
	if err != nil || u.UID != rec.UID {
		return nil // the account step refuses or makes the account
	}
	e.Printf("make the home %s of the account %s again (it was missing)", home, layout.Account)
	return ensureHome(home, u.UID, u.GID)
}
