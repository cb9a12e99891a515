package uninstall

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/journal"
	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Command is what the uninstall command wires.
type Command struct {
	Options  Options
	Host     layout.Host
	Accounts accounts.Adapter
	Systemd  systemd.Manager
	// Child runs a service-account step (asaccount.Children.Run in
	// production).
	Child asaccount.Runner
	// EndChild, when set, ends the service-account child
	// (asaccount.Children.Close): before the account step, and before the
	// host lock is released.
	EndChild func() error
	// Running reports processes of a uid (ProcRunning in production).
	Running Processes
	// Version is the binary's version, bound into the journal.
	Version string
	Out     io.Writer
}

// JournalPath is root's uninstall journal of an installation.
func JournalPath(h layout.Host, id ident.InstallationID) string {
	return filepath.Join(h.JournalDir(id), workflow.UninstallDefinition().Name+".journal")
}

// Run uninstalls the node or resumes an interrupted uninstallation. It
// takes the host lock first and keeps it to the end. Every
// refusal comes before the first change: a host without a record of the
// installation needs --force, then Core must confirm the removal (unless
// --force or the node never registered). A complete journal is a no-op,
// unless its run kept the account for a rerun or the node was installed
// again since; then it is kept aside and a new run starts. The install
// journal is kept aside as a receipt before the workflow runs. A refusal
// before the first change is a workflow.Refusal (the command prints
// "Nothing was changed."); a failure after it is a *workflow.Changed
// naming what this run changed. The report's Run says whether the run
// found the node already uninstalled (converged), resumed an
// uninstallation or ran a new one (fresh).
func Run(ctx context.Context, c Command) (*workflow.Report, error) {
	id := c.Options.InstallationID
	e := &Env{Opts: c.Options, HostPaths: c.Host, Adapter: c.Accounts, DBs: accounts.Under(c.Host.Root),
		Manager: c.Systemd, Runner: c.Child, EndChild: c.EndChild, Running: c.Running, Out: c.Out}
	// Every decision below (is the installation recorded, did it
	// register, what Core answers) is taken under the host lock and acted
	// on under it (CONTRACT §10, "Decisions under the lock").
	safefile.Pausepoint("uninstall-before-host-lock")
	lock, err := install.HostLock(ctx, c.Host, func(label string) { e.Printf("%s...", label) })
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	// Before the lock goes: no process of the account's outlives the run.
	defer e.endChild()
	safefile.Pausepoint("uninstall-host-locked")
	if err := install.CheckBookkeeping(c.Host, id); err != nil {
		return nil, err
	}
	// A node the platform's installer made (its account.json) is taken
	// over first, once every record of it agrees with the host: the
	// bookkeeping then says what to remove (CONTRACT §11). It is recorded
	// only after every check of this command has passed.
	takeover, err := install.FindTakeover(ctx, c.Host, id, nil)
	if err != nil {
		return nil, err
	}
	if e.UnlabelledNetwork, err = install.UnlabelledNetwork(c.Host, id); err != nil {
		return nil, workflow.Refuse(err)
	}
	e.UnlabelledNetwork = e.UnlabelledNetwork || (takeover != nil && takeover.Network != "")
	path := JournalPath(c.Host, id)
	prev, err := workflow.InspectJournal(path, workflow.Lookup)
	resuming := err == nil && prev.Condition != workflow.Complete
	if err == nil && prev.Condition == workflow.Complete {
		again, err := installedAgain(c.Host, id)
		if err != nil {
			return nil, workflow.Refuse(err)
		}
		if !again && !accountKept(c.Host) {
			e.Printf("The node %s is already uninstalled from this host.", id)
			prev.Run = workflow.RunConverged
			return prev, nil
		}
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read the uninstall journal %s: %w", path, err)
	}
	inst, found, err := readRecords(c.Host, id)
	if err != nil {
		return nil, workflow.Refuse(err)
	}
	if !found && !resuming && !c.Options.Force {
		return nil, workflow.Refusef("this host has no record of the installation %s (%s is missing); if the node's files remain, rerun with --force", id, c.Host.Record(id))
	}
	inst.ID = id
	e.Inst = inst
	// Whether Core must confirm is root's fact, read before the install
	// journal is kept aside: the account's files can add to it, never
	// take it away.
	if e.Registered, err = install.Registered(c.Host, id); err != nil {
		return nil, workflow.Refuse(err)
	}
	if err := e.checkAccount(prev); err != nil {
		return nil, err
	}
	if !resuming {
		if _, err := e.DBs.LookupUser(layout.Account); err == nil {
			a, err := e.serviceStep(workflow.UninstallAskCore).Call(ctx, nil, false)
			if err != nil {
				return nil, workflow.Refuse(err)
			}
			res := a.Result()
			e.precheck = &res
		} else if !errors.Is(err, accounts.ErrNotFound) {
			return nil, workflow.Refusef("the service account: %w", err)
		}
	}
	// From here on the command changes the host: a failure names what this
	// run changed before it (CONTRACT §10, "Nothing was changed.").
	var changed []string
	after := func(err error) error {
		if len(changed) == 0 && workflow.NoSpace(err, "") != "" {
			return workflow.Advise(err, nextUninstall(err))
		}
		return workflow.AfterChanges(err, changed, nextUninstall(err))
	}
	dir := c.Host.JournalDir(id)
	dirExisted, _ := safefile.Exists(dir)
	if err := safefile.MkdirAll(dir, 0o700); err != nil {
		return nil, after(fmt.Errorf("create %s: %w", dir, err))
	}
	if !dirExisted {
		changed = append(changed, fmt.Sprintf("the directory %s (created)", dir))
	}
	if takeover != nil {
		took, err := takeover.Commit()
		changed = append(changed, took...)
		if err != nil {
			return nil, after(err)
		}
	}
	if prev != nil && prev.Condition == workflow.Complete {
		if err := journal.KeepAside(path); err != nil {
			return nil, after(err)
		}
		changed = append(changed, fmt.Sprintf("the journal of the finished uninstallation (%s kept aside as a receipt)", path))
	}
	// A journal that needs inspection is refused by the run, which then
	// changes nothing: the install journal stays too.
	if prev == nil || prev.Condition != workflow.NeedsInspection {
		kept, err := keepInstallReceipt(c.Host, id)
		if err != nil {
			return nil, after(err)
		}
		if kept {
			changed = append(changed, fmt.Sprintf("the install journal (%s kept aside as a receipt)", install.JournalPath(c.Host, id)))
		}
	}
	r := &workflow.Runner{
		Def: workflow.UninstallDefinition(), Steps: install.LockGuarded(Steps(e), lock.Verify), Journal: path,
		Binding: workflow.Binding{Version: c.Version, InstallationID: id.String()},
	}
	rep, err := r.Run(ctx)
	if err != nil {
		var re *workflow.RunError
		if errors.As(err, &re) {
			changed = append(changed, re.Changes()...)
		}
		var refused *workflow.RefusedError
		if errors.As(err, &refused) {
			err = workflow.Refuse(err) // the engine refuses before its first write
		}
		return rep, after(err)
	}
	summary(e, e.final)
	if rep.AccountKept() != "" || rep.NetworkLeft() != "" {
		// The journal ended, but the account, its home, installer.db and
		// /etc/oac-node remain for the rerun the account step named, or
		// the network for the command the network step printed.
		rep.Condition = workflow.Incomplete
	}
	return rep, nil
}

// nextUninstall is the next command after a failure that came after a
// change: the rerun continues from where the run stopped, once what a
// refusal names is dealt with.
func nextUninstall(err error) string {
	if full := workflow.NoSpace(err, layout.Default.Home()); full != "" {
		return full + " rerun the same command to continue the uninstallation."
	}
	var r *workflow.Refusal
	if errors.As(err, &r) {
		return "Once that is dealt with, rerun the same command to continue the uninstallation."
	}
	return "Rerun the same command to continue the uninstallation."
}

// summary prints what stays and the commands that remove it.
func summary(e *Env, facts workflow.Facts) {
	id := e.Opts.InstallationID
	if img := facts[FactRuntimeImage]; img != "" {
		e.Printf("The Runtime image stays; remove it when no other node uses it: sudo docker image rm %s", img)
	}
	if net := facts[workflow.FactNetworkLeft]; net != "" {
		e.Printf("The Docker network %s stays: the Docker Engine did not run; once it runs, remove it: sudo docker network rm %s", net, net)
	}
	if facts[FactAccountKept] != "" {
		e.Printf("The node %s is uninstalled from this host except the account %s; rerun the command as shown above.", id, layout.Account)
		return
	}
	e.Printf("The node %s is uninstalled from this host.", id)
}

// nothingChanged marks a refusal before the first change as a
// workflow.Refusal: the command says "Nothing was changed." where it
// prints it.
func nothingChanged(err error) error { return workflow.Refuse(err) }

// readRecords reads the installation from root's records, without
// creating or changing any (the bookkeeping opened read-only): the host record /etc/oac-node/<id>.json
// (CONTRACT §2.4), else the bookkeeping when it exists.
func readRecords(h layout.Host, id ident.InstallationID) (bookkeeping.Installation, bool, error) {
	rec, err := hostrecord.Read(h, id)
	if err == nil {
		return bookkeeping.Installation{ID: id, Provider: rec.Provider, CoreURL: rec.CoreURL,
			AllowInsecureOrigin: rec.AllowInsecureOrigin, CoreCA: rec.CoreCASHA256}, true, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return bookkeeping.Installation{}, false, err
	}
	if _, err := os.Lstat(h.Bookkeeping()); err != nil {
		return bookkeeping.Installation{}, false, nil
	}
	db, err := bookkeeping.OpenReadOnly(h.Bookkeeping())
	if errors.Is(err, os.ErrNotExist) {
		return bookkeeping.Installation{}, false, nil // bookkeeping.ErrHoldsNothing
	}
	if err != nil {
		return bookkeeping.Installation{}, false, err
	}
	defer db.Close()
	inst, err := db.GetInstallation(id)
	if errors.Is(err, bookkeeping.ErrNotFound) {
		return bookkeeping.Installation{}, false, nil
	}
	return inst, err == nil, err
}

// installedAgain reports whether the installation was installed again
// after the uninstallation its complete uninstall journal records: an
// install journal exists (the uninstallation kept the one before it aside),
// or the host record does (the uninstallation removed it).
func installedAgain(h layout.Host, id ident.InstallationID) (bool, error) {
	for _, p := range []string{install.JournalPath(h, id), h.Record(id)} {
		if ok, err := safefile.Exists(p); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// keepInstallReceipt keeps the install journal aside (install.journal.<n>)
// as a receipt before the uninstall workflow runs: once the node is being
// removed, that journal describes a run that is over, whatever it says, and
// neither status nor a later installation of the same id may take its
// unfinished steps for a run to continue. Doing it before the first step,
// under the host lock, leaves no moment when a complete uninstall journal
// sits beside the install journal of the installation it removed, so an
// install journal next to a complete uninstall journal always means the
// node was installed again (installedAgain).
func keepInstallReceipt(h layout.Host, id ident.InstallationID) (kept bool, err error) {
	path := install.JournalPath(h, id)
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err := journal.KeepAside(path); err != nil {
		return false, err
	}
	return true, nil
}

// accountKept reports whether an earlier run kept the account for a
// rerun: the bookkeeping, opened read-only, still records the account and
// no installation.
func accountKept(h layout.Host) bool {
	if _, err := os.Lstat(h.Bookkeeping()); err != nil {
		return false
	}
	db, err := bookkeeping.OpenReadOnly(h.Bookkeeping())
	if err != nil {
		return false
	}
	defer db.Close()
	_, ok, err := db.Account()
	insts, lerr := db.ListInstallations()
	return err == nil && lerr == nil && ok && len(insts) == 0
}

// Steps binds every state of the uninstall workflow to its step: root's
// steps to e, and each state the definition marks workflow.ServiceAccount
// to an asaccount.Step (serviceStep), which runs the state's step in the
// child (Server, RunStep); the Core check first answers from the check
// Run made before the journal (askCoreStep).
func Steps(e *Env) map[workflow.State]workflow.Step {
	out := map[workflow.State]workflow.Step{}
	for _, st := range workflow.UninstallDefinition().AccountStates(workflow.ServiceAccount) {
		out[st] = e.serviceStep(st)
	}
	out[workflow.UninstallAskCore] = askCoreStep{e}
	out[workflow.UninstallStopUnit] = stopUnitStep{e}
	out[workflow.UninstallRemoveUnit] = removeUnitStep{e}
	out[workflow.UninstallAccount] = accountStep{e}
	out[workflow.UninstallBookkeeping] = bookkeepingStep{e}
	return out
}

// ifNoAccount is the event of each service-account step when the service
// account does not exist: nothing of the node can then be the account's,
// so the step has nothing to do (and the Core check is skipped).
var ifNoAccount = map[workflow.State]workflow.Event{
	workflow.UninstallAskCore:           workflow.EventCoreCheckSkipped,
	workflow.UninstallNetwork:           workflow.EventNetworkHandled,
	workflow.UninstallNodeState:         workflow.EventStateRemoved,
	workflow.UninstallMicrosandboxStore: workflow.EventStoreHandled,
}

// serviceStep runs the step of the service-account state st in the child.
func (e *Env) serviceStep(st workflow.State) asaccount.Step {
	return asaccount.Step{Workflow: workflow.UninstallDefinition().Name, State: st, D: e,
		IfNoAccount: ifNoAccount[st], Accounts: e.DBs}
}
