package uninstall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// FactAccountKept says why the account stays for a rerun: "process" (a
// process still runs as it) or "store" (a microsandbox store was kept).
const FactAccountKept = workflow.FactAccountKept

// accountStep handles the oac-node account by the bookkeeping: while
// other nodes remain it keeps everything; an account made again with
// other ids, or gone with its uid another account's now (a run with
// --force, see checkAccount), is neither deleted nor changed, and its
// home is kept; while a process still runs as the account, or a
// microsandbox store was kept, it keeps the account for a rerun; else an
// account the installer created is deleted with its home, and an adopted
// one loses only the groups the installer added and regains its recorded
// home mode. Each action is idempotent, so the Verify policy reruns it.
type accountStep struct{ e *Env }

func (s accountStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	e, id := s.e, s.e.Opts.InstallationID
	// The run's own service-account child is a process of the account:
	// it ends first, so that only another's keeps the account.
	if err := e.endChild(); err != nil {
		return workflow.Result{}, err
	}
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
	if r, ok := install.RecordedAccount(rec, true); ok {
		m, err := e.DBs.CheckRecorded(r)
		if err != nil {
			return workflow.Result{}, fmt.Errorf("the service account: %w", err)
		}
		// A gone account whose uid nobody holds is what this step's own
		// userdel leaves (an earlier attempt cut off before it forgot the
		// account), and, deleted by hand, leaves the home to no one else:
		// the home the installer created goes as usual.
		if m != nil && !ownDeletion(m) {
			return s.keepNotRecorded(db, m)
		}
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
		if facts[FactStoresKept] != "" {
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
		if err := s.removeRemnants(ctx, db, rec); err != nil {
			return workflow.Result{}, err
		}
		if err := safefile.RemoveTree(e.HostPaths.Home()); err != nil {
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

// removeRemnants finishes a userdel of the account the installer created
// that ended after it wrote /etc/passwd (a full /etc): the account's
// memberships of the groups the installer added it to and its own group
// (the recorded gid, or any while the record has none) stay, and would
// make every later install's useradd fail "group oac-node exists". The
// step is reached only with the account gone and its uid no one's
// (ownDeletion), so the group is the one useradd made for it.
func (s accountStep) removeRemnants(ctx context.Context, db *bookkeeping.DB, rec bookkeeping.Account) error {
	e := s.e
	if _, err := e.DBs.LookupUser(layout.Account); err == nil {
		return nil // the userdel above failed as a whole
	}
	// Its shadow entry: harmless to a later useradd, which replaces it,
	// but a remnant of the installer's all the same.
	orphan, alone, err := e.DBs.ShadowOnly(layout.Account)
	switch {
	case err != nil:
		return err
	case orphan && alone:
		e.Printf("remove the shadow entry of the deleted account %s", layout.Account)
		if err := e.Adapter.RemoveShadowOrphans(ctx); err != nil {
			return err
		}
	case orphan:
		// pwconv would change more than this entry here: the operator
		// decides, line by line.
		e.Printf("the shadow entry of the deleted account %s stayed; remove it with `sudo pwck`, answering y for the line of %s only", layout.Account, layout.Account)
	}
	groups, err := db.Groups()
	if err != nil {
		return err
	}
	member, err := memberOf(e.DBs)
	if err != nil {
		return fmt.Errorf("the service account's groups: %w", err)
	}
	for _, g := range groups {
		if slices.Contains(member, g.Name) {
			e.Printf("remove the membership of the deleted account %s from the group %s", layout.Account, g.Name)
			if err := e.Adapter.RemoveFromGroup(ctx, g.Name); err != nil {
				return err
			}
		}
	}
	g, err := e.DBs.LookupGroup(layout.Account)
	if errors.Is(err, accounts.ErrNotFound) {
		return s.removeGshadowRemnant(ctx)
	}
	if err != nil {
		return fmt.Errorf("the service account's group: %w", err)
	}
	if rec.GID != 0 && g.GID != rec.GID {
		e.Printf("keep the group %s: its gid %d is not the recorded %d", layout.Account, g.GID, rec.GID)
		return nil
	}
	e.Printf("remove the group %s that the deleted account's userdel left", layout.Account)
	if err := e.Adapter.DeleteServiceGroup(ctx); err != nil && !errors.Is(err, accounts.ErrNotFound) {
		return err
	}
	return s.removeGshadowRemnant(ctx)
}

// removeGshadowRemnant removes the /etc/gshadow entry of the account's own
// group that a userdel (or groupdel) cut off after it wrote /etc/group and
// before /etc/gshadow leaves: grpconv, where that is all it changes;
// otherwise the operator is told which line to remove.
func (s accountStep) removeGshadowRemnant(ctx context.Context) error {
	e := s.e
	g, err := e.DBs.GshadowOf(layout.Account)
	if err != nil {
		return err
	}
	switch orphan, alone := g.Orphan(layout.Account); {
	case orphan && alone:
		e.Printf("remove the /etc/gshadow entry of the deleted group %s", layout.Account)
		return e.Adapter.RemoveGshadowOrphans(ctx)
	case orphan:
		e.Printf("the /etc/gshadow entry of the deleted group %s stayed; remove it with `sudo grpck`, answering y for the line of %s only", layout.Account, layout.Account)
	}
	return nil
}

// memberOf lists the groups that list the account as a member in
// /etc/group or in /etc/gshadow (a command cut off between the two leaves
// only the second).
func memberOf(dbs accounts.Databases) ([]string, error) {
	names, err := dbs.GroupNames(layout.Account)
	if err != nil {
		return nil, err
	}
	g, err := dbs.GshadowOf(layout.Account)
	if err != nil {
		return nil, err
	}
	for _, n := range g.Members {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names, nil
}

// ownDeletion reports whether m is what this step leaves when it is cut
// off after userdel, before it forgets the account: the account gone, its
// uid nobody's.
func ownDeletion(m *accounts.Mismatch) bool {
	return m.Now == nil && m.UIDHolder == ""
}

// keepNotRecorded handles an account that is not the recorded one: no
// account or group is changed and the home stays, its files being the
// recorded uid's; the bookkeeping forgets the account and the groups, and
// the operator is given the commands that remove what stays.
func (s accountStep) keepNotRecorded(db *bookkeeping.DB, m *accounts.Mismatch) (workflow.Result, error) {
	e, home := s.e, layout.Default.Home()
	e.Printf("change no account: %s is not the account the installer recorded", layout.Account)
	e.Printf("keep %s: its files belong to uid %d; once you have checked that nothing there is needed, remove it: sudo rm -rf %s", home, m.Recorded.UID, home)
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

// checkAccount decides, under the host lock and before any change, what
// the run may do about an account that is not the one the bookkeeping
// records (gone, or made again with other ids; install.AccountMismatch).
// Without --force it refuses, naming the recovery. With --force nothing
// runs as that account — e.Runner answers the service-account steps
// without a child (the Core check skipped, the network, the node root and
// the stores kept) — and the account step changes no account. An account
// that this uninstallation's own account step deleted before it was cut
// off (prev, pending in that step) is no mismatch.
func (e *Env) checkAccount(prev *workflow.Report) error {
	m, err := install.AccountMismatch(e.HostPaths)
	if err != nil {
		return nothingChanged(err)
	}
	if m == nil {
		return nil
	}
	if ownDeletion(m) && prev != nil && prev.Condition != workflow.Complete && prev.Pending != nil && prev.Pending.State == workflow.UninstallAccount {
		return nil
	}
	net := docker.NetworkName(e.Opts.InstallationID)
	if !e.Opts.Force {
		force := fmt.Sprintf("rerun this command with --force: nothing then runs as that account, no account is changed, the node's Docker network %s stays for you to remove, and it %s", net, install.UninstallKeeps(m))
		if cmd := m.RecreateCommand(); cmd != "" {
			return nothingChanged(m.Refusal(fmt.Sprintf("Give the account back its recorded ids (%s), then run this command again; or remove the node on the Nodes page of Web and %s.", cmd, force)))
		}
		return nothingChanged(m.Refusal(fmt.Sprintf("Remove the node on the Nodes page of Web, then %s.", force)))
	}
	p := m.Problem()
	e.Printf("%s; with --force nothing runs as it and no account is changed.", strings.ToUpper(p[:1])+p[1:])
	if e.Inst.Provider != release.ProviderMicrosandbox {
		e.Printf("keep the node's Docker network %s, if it is there; once no container of the node remains, remove it: sudo docker network rm %s", net, net)
	}
	e.Runner = noChild
	return nil
}

// noChild answers the service-account steps without a child, for a run
// whose account is not the node's: the Core check is skipped (--force) and
// the network, the node root and the stores are left as they are.
func noChild(_ context.Context, req asaccount.Request) (asaccount.Answer, error) {
	ev, ok := ifNoAccount[workflow.State(req.Step)]
	if !ok {
		return asaccount.Answer{}, fmt.Errorf("uninstallation: %q is not a service-account step", req.Step)
	}
	a := asaccount.Answer{Event: ev}
	if workflow.State(req.Step) == workflow.UninstallAskCore {
		a.Facts = map[string]string{FactCore: CoreForced}
	}
	return a, nil
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
	member, err := memberOf(e.DBs)
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

// ProcRunning reports whether a process under procfs (normally /proc)
// runs with the real uid uid.
func ProcRunning(procfs string) Processes {
	return func(uid int) (bool, error) {
		entries, err := os.ReadDir(procfs)
		if err != nil {
			return false, fmt.Errorf("list processes: %w", err)
		}
		for _, ent := range entries {
			if _, err := strconv.Atoi(ent.Name()); err != nil {
				continue
			}
			var st unix.Stat_t
			if unix.Stat(procfs+"/"+ent.Name(), &st) != nil {
				continue // ended meanwhile
			}
			if int(st.Uid) == uid {
				return true, nil
			}
		}
		return false, nil
	}
}
