package status

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// What an installation needs: its condition and the one next command, from
// root's facts first; what the account's files say only ever chooses
// between commands root composes, and none of their text is quoted.

// advisor is what the advice is composed from besides the installation:
// the host's paths and the command line's spelling of the install command
// (Options.InstallCommand).
type advisor struct {
	host           layout.Host
	installCommand func(h layout.Host, id ident.InstallationID, rec *hostrecord.Record) (string, bool)
}

// uninstalled reports whether an uninstallation completed and the node was
// not installed again: the uninstallation keeps the install journal aside,
// so an install journal beside a complete uninstall journal is newer.
func (s *Installation) uninstalled() bool {
	u := s.Workflow(workflow.UninstallDefinition().Name)
	return u != nil && (u.Condition == workflow.Complete || u.Condition == workflow.Incomplete) && s.Workflow(workflow.InstallDefinition().Name) == nil
}

// keptAccountNext is the rerun that finishes an uninstallation which kept
// the service account for a rerun (its journal ended; the account, its
// home, installer.db and /etc/oac-node remain), or "".
func (s *Installation) keptAccountNext() string {
	u := s.Workflow(workflow.UninstallDefinition().Name)
	if u == nil || !s.uninstalled() {
		return ""
	}
	rerun := "sudo oac-node-install --uninstall --installation-id " + s.InstallationID.String() + " --force"
	switch u.AccountKept() {
	case "":
		return ""
	case "store":
		return "the uninstallation kept the account " + layout.Account + " and its home for a kept microsandbox store: once the store is removed, finish it: " + rerun
	default:
		return "the uninstallation kept the account " + layout.Account + " while a process ran as it (see `pgrep -u " + layout.Account + "`): once none runs, finish it: " + rerun
	}
}

// groupLeftNext names, once an uninstallation completed, the group
// oac-node that stays without its account, with its memberships: a userdel
// that ended early (a full /etc) leaves them, and every later install
// refuses the group; "" when there is none.
func (s *Installation) groupLeftNext(a advisor) string {
	if !s.uninstalled() {
		return ""
	}
	dbs := accounts.Under(a.host.Root)
	if _, err := dbs.LookupUser(layout.Account); !errors.Is(err, accounts.ErrNotFound) {
		return ""
	}
	if _, err := dbs.LookupGroup(layout.Account); err != nil {
		return ""
	}
	cmds := []string{"sudo groupdel " + layout.Account}
	if member, err := dbs.GroupNames(layout.Account); err == nil {
		for _, g := range member {
			cmds = append(cmds, "sudo gpasswd --delete "+layout.Account+" "+g)
		}
	}
	return "the group " + layout.Account + " remains without its account (an uninstallation's userdel ended early), and every install refuses it: once nothing needs it, remove it: " + strings.Join(cmds, "; ")
}

// installed reports whether the installation is meant to be running: its
// install journal is complete or, without one, the host records it.
func (s *Installation) installed() bool {
	if u := s.Workflow(workflow.UninstallDefinition().Name); u != nil && u.Condition != workflow.Complete {
		return false
	}
	if in := s.Workflow(workflow.InstallDefinition().Name); in != nil {
		return in.Condition == workflow.Complete
	}
	return s.record != nil
}

// assess sets the installation's condition and its one next step: the
// first of a journal that needs inspection, a failed workflow, an
// unfinished one (a running workflow is none of these), an unreadable host
// record or node root, a stuck lease, and for an installed node its
// registration, Core's removal of it, its unit, and Core's view of it. An
// unreachable systemd or Core is shown, never a reason by itself. Nothing
// needing attention while a workflow runs is "running"; while root's
// install or uninstall runs, the node's registration, unit and Core are in
// flux and not judged.
func (s *Installation) assess(a advisor) {
	s.Condition, s.Next = ConditionOK, ""
	s.Uninstalled = s.uninstalled()
	next := s.attention(a)
	running := false
	for _, w := range s.Workflows {
		running = running || w.Running != nil
	}
	switch {
	case next != "":
		s.Condition, s.Next = ConditionAttention, next
	case running:
		s.Condition = ConditionRunning
	}
}

// attention is the one next step the installation needs, or "".
func (s *Installation) attention(a advisor) string {
	id := s.InstallationID
	rootRunning := false
	// A generation whose prepare, repair or collect runs is held by it:
	// its lease's state is that run's, not a stuck one.
	busy := map[int64]bool{}
	for _, w := range s.Workflows {
		rootRunning = rootRunning || w.Running != nil && filepath.Dir(w.Journal) == a.host.JournalDir(id)
		if w.Running != nil && w.Binding != nil && w.Binding.Generation > 0 && filepath.Dir(w.Journal) != a.host.JournalDir(id) {
			busy[w.Binding.Generation] = true
		}
	}
	if b := s.Bookkeeping; b != nil && b.AccountMismatch != "" && !rootRunning {
		return b.AccountMismatch // every install or uninstall refuses until it is mended
	}
	if !rootRunning {
		if ok, _ := safefile.Exists(hostrecord.PlatformAccountPath(a.host)); ok {
			// The platform's installer made the account (and maybe its
			// groups, home and network): nothing is done until this
			// installer has taken that over (CONTRACT §11).
			if s.record == nil {
				return fmt.Sprintf("%s, the platform installer's record of the %s account it made, remains without a host record of this node: remove what it lists by hand (the account or its groups, its home) and the file", hostrecord.PlatformAccountPath(a.host), layout.Account)
			}
			return fmt.Sprintf("this node was made by the platform's installer (%s): take it over with the install command Web generated for it, or remove it: sudo oac-node-install --uninstall --installation-id %s", hostrecord.PlatformAccountPath(a.host), id)
		}
	}
	if next := s.homeNext(a); next != "" {
		return next
	}
	for _, cond := range []workflow.Condition{workflow.NeedsInspection, workflow.Failed, workflow.Resumable} {
		for _, w := range s.Workflows {
			if w.Running == nil && w.Condition == cond {
				return s.workflowNext(a, &w.Report)
			}
		}
	}
	if next := s.keptAccountNext(); next != "" && !rootRunning {
		return next
	}
	if next := s.groupLeftNext(a); next != "" && !rootRunning {
		return next
	}
	if s.recordErr != nil {
		return "inspect " + a.host.Record(id) + ": " + s.recordErr.Error()
	}
	// The bookkeeping records the installation, its host record is gone
	// (and no install of root's runs to write it, no unfinished journal
	// explains it: those were judged above): every rerun refuses with the
	// same words until an operator mends it.
	if b := s.Bookkeeping; b != nil && b.Installation != nil && s.record == nil && !rootRunning && !s.uninstalled() {
		return hostrecord.Missing(a.host, id)
	}
	if b := s.Bookkeeping; b != nil && b.State == BookkeepingDamaged {
		return bookkeeping.DamagedAdvice(b.Database, id)
	}
	if b := s.Bookkeeping; b != nil && b.State == BookkeepingError {
		return "inspect " + b.Database + ": " + b.Error
	}
	if n := s.Node; n != nil {
		// What the node root holds is the account's: why it could not
		// be read is shown with the node, not in the advice.
		if n.Error != "" {
			return "check the node root " + n.NodeRoot + ": it cannot be read (why is shown with the node)"
		}
		for _, g := range n.Generations {
			if len(g.Next) > 0 && !busy[g.Generation] {
				return g.Next[0]
			}
		}
	}
	if rootRunning || !s.installed() {
		return ""
	}
	rerun := "rerun the install command Web generated for this node"
	unit := layout.UnitName(id)
	switch r := s.Registration; {
	case r == nil:
		return rerun + ": the node root " + a.host.NodeRoot(id) + " is missing"
	case r.State == RegistrationInvalid:
		return "inspect " + layout.Node{Root: a.host.NodeRoot(id)}.Identity() + ": the node's registration is refused (why is shown with the registration)"
	case r.State != RegistrationDone:
		return s.continueInstall(a, nil) + " (the node's registration was not confirmed)"
	}
	if rr := s.RootRecord; rr != nil && rr.NodeID != "" && s.Registration.NodeID != "" && s.Registration.NodeID != rr.NodeID {
		// Before Core's answer: Core was asked about the node the
		// account named, with a credential that is not its own.
		return "inspect " + layout.Node{Root: a.host.NodeRoot(id)}.Identity() + ": it names the node " + s.Registration.NodeID +
			", not the node " + rr.NodeID + " root recorded when Core confirmed the registration (the service account changed it); to remove this host's node, remove the node " +
			rr.NodeID + " in Web, then: sudo oac-node-install --uninstall --installation-id " + id.String()
	}
	if c := s.Core; c != nil && c.State == CoreRemoved {
		return "the node was removed in Core (HTTP 401); remove it from this host: sudo oac-node-install --uninstall --installation-id " + id.String()
	}
	if u := s.Unit; u != nil && u.Reachable {
		if next := unitNext(u, unit, s.rerun(a)); next != "" {
			return next
		}
	}
	if c := s.Core; c != nil {
		switch c.State {
		case CoreNotConnected:
			return "Core reports the node not connected; see the node service's log: sudo journalctl -xeu " + unit
		case CoreProviderNotReady:
			return providerNext(c.Diagnostic, unit)
		}
	}
	return ""
}

// unitNext is what to do about a node unit that is not active, or "".
func unitNext(u *UnitStatus, unit, rerun string) string {
	how := u.ActiveState
	if u.SubState != "" {
		how += " (" + u.SubState + ")"
	}
	if u.LastExit != "" {
		how += ", last " + u.LastExit
	}
	switch {
	case u.LoadState == "masked":
		return "the unit is masked: sudo systemctl unmask " + unit
	case u.LoadState != "loaded":
		return rerun + ": systemd has no unit " + unit + " (" + u.LoadState + ")"
	case u.ActiveState == "active" && u.UnitFileState == "disabled":
		return "the node service runs but is disabled, so it will not start at boot: sudo systemctl enable " + unit
	case u.ActiveState == "active":
		return ""
	case u.ActiveState == "inactive" && (u.Result == "" || u.Result == "success") && u.UnitFileState == "disabled":
		return "the node service is stopped and disabled: sudo systemctl enable --now " + unit
	case u.ActiveState == "inactive" && (u.Result == "" || u.Result == "success"):
		return "the node service is stopped: sudo systemctl start " + unit
	case u.ActiveState == "activating" || u.ActiveState == "reloading":
		return fmt.Sprintf("the node service is not running yet, %s, %d restarts; see why: sudo journalctl -xeu %s", how, u.NRestarts, unit)
	}
	return "the node service is " + how + "; see why: sudo journalctl -xeu " + unit
}

// providerNext is what to do about a provider Core reports not ready,
// by the node's diagnostic (CONTRACT §6.1).
func providerNext(diagnostic, unit string) string {
	switch diagnostic {
	case "docker_unavailable":
		return "the node cannot reach Docker (docker_unavailable): sudo systemctl enable --now docker"
	case "kvm_unavailable":
		return "the node cannot use KVM (kvm_unavailable): check that /dev/kvm exists and its group is kvm"
	case "capacity_insufficient":
		return "the host has too few CPUs or too little memory for a sandbox (capacity_insufficient)"
	}
	reason := "Core reports the node's provider not ready"
	if diagnostic != "" {
		reason += " (" + diagnostic + ")"
	}
	return reason + "; see the node service's log: sudo journalctl -xeu " + unit
}

// workflowNext is what to do about a workflow journal that is not
// complete. What a node journal holds is the account's text: its note
// stays beside the advice (printReport), and the advice names only the
// workflow and generation; the node's helper is run by the node program,
// as the node account, never from root's terminal, where a program the
// account can write could inject input (TIOCSTI) or read what is typed.
func (s *Installation) workflowNext(a advisor, r *workflow.Report) string {
	id := s.InstallationID
	root := filepath.Dir(r.Journal) == a.host.JournalDir(id)
	if r.Condition == workflow.NeedsInspection {
		if !root {
			return "inspect " + r.Journal + ": the node refuses to continue this journal of its own until an operator has judged it (its note is shown with it)"
		}
		return "inspect " + r.Journal + ": " + r.Note
	}
	unit := layout.UnitName(id)
	switch r.Workflow {
	case workflow.InstallDefinition().Name:
		if r.LastError != nil && strings.Contains(r.LastError.Error, noderoot.ErrInstallLocked.Error()) {
			// The step found the node's generation helper (or another
			// installation) holding install.lock: rerunning at once is
			// refused again.
			return "wait until the node's generation helper ends (a prepare, repair or collect shown as running here), then " + s.continueInstall(a, r)
		}
		return s.continueInstall(a, r)
	case workflow.UninstallDefinition().Name:
		return "sudo oac-node-install --uninstall --installation-id " + id.String()
	case workflow.PrepareDefinition().Name:
		if b := r.Binding; b != nil {
			return fmt.Sprintf("the node program prepares generation %d again itself, as the node account; to retry now, restart the node service, whose node program runs the helper: sudo systemctl restart %s", b.Generation, unit)
		}
	case workflow.CollectDefinition().Name:
		if b := r.Binding; b != nil {
			return fmt.Sprintf("the node program collects generation %d again itself, as the node account, on Core's next drop grant; see why it stopped: sudo journalctl -u %s -n 200 --no-pager", b.Generation, unit)
		}
	case workflow.RepairDefinition().Name:
		if b := r.Binding; b != nil {
			return fmt.Sprintf("the node program repairs generation %d again itself, as the node account, when it next needs it; see why it stopped: sudo journalctl -u %s -n 200 --no-pager", b.Generation, unit)
		}
	}
	if !root {
		return "the node program runs it again itself; see the node service's log: sudo journalctl -u " + unit + " -n 200 --no-pager"
	}
	return "rerun the command that wrote " + r.Journal
}

// continueInstall names the command that continues the installation, whose
// install journal (r, nil when there is none) is not complete. Once the
// node has its credential — root's bookkeeping or journal says it
// registered or began to, or the node root shows its identity — that is
// the install command without a token, from root's host record
// (Options.InstallCommand); the node program confirms the identity it
// wrote with Core. Before, and on a host without the record, the node
// still needs its enrollment token: the command Web generated.
func (s *Installation) continueInstall(a advisor, r *workflow.Report) string {
	withToken := "rerun the install command Web generated for this node, with its enrollment token: it continues where it stopped"
	if s.record == nil || s.recordErr != nil || !s.hasCredential(r) || a.installCommand == nil {
		return withToken
	}
	cmd, ok := a.installCommand(a.host, s.InstallationID, s.record)
	if !ok {
		return withToken + " (the host record " + a.host.Record(s.InstallationID) + " holds a value the command does not accept: inspect it)"
	}
	if !strings.Contains(cmd, ConsolePlaceholder) {
		return "continue the installation without a token, since the node has its credential: " + cmd
	}
	return "continue the installation without a token, since the node has its credential (for " + ConsolePlaceholder + " give the --source-url of the command Web generated: this host does not record it): " + cmd
}

// rerun is how status names the install command that repairs a registered
// node: the short command when root's records hold everything the
// installation was given (Options.InstallCommand says so by naming no
// console URL), else the command Web generated.
func (s *Installation) rerun(a advisor) string {
	if s.record != nil && s.recordErr == nil && a.installCommand != nil {
		if cmd, ok := a.installCommand(a.host, s.InstallationID, s.record); ok && !strings.Contains(cmd, ConsolePlaceholder) && !strings.Contains(cmd, "<") {
			return "rerun " + cmd
		}
	}
	return "rerun the install command Web generated for this node"
}

// hasCredential reports whether the node has its credential, so that the
// install command needs no token: root's bookkeeping or install journal
// says the node registered or its register step began (the node program
// writes the identity before it enrolls), or the node root holds its
// identity. The last is the account's word: it only chooses which of two
// commands root names, each built from root's own records.
func (s *Installation) hasCredential(r *workflow.Report) bool {
	if b := s.Bookkeeping; b != nil && b.Installation != nil && b.Installation.Registered {
		return true
	}
	if r != nil && RegisterBegun(r) {
		return true
	}
	reg := s.Registration
	return reg != nil && (reg.State == RegistrationPending || reg.State == RegistrationDone)
}

// ConsolePlaceholder stands, in an install command status names, for the
// console URL the host does not record.
const ConsolePlaceholder = "<console URL>"

// RegisterBegun reports whether an install journal's register step began
// or is done: the node program writes its identity before it enrolls, so
// the node may have its credential.
func RegisterBegun(r *workflow.Report) bool {
	return r.Attempts[string(workflow.InstallRegister)] > 0
}

// homeNext is what to do when the service account's home is missing, or ""
// (an uninstallation under way continues by its own command). A node
// whose credential went with the home cannot continue: it is removed and
// added again. One that never registered is installed again by the
// command Web generated, which makes the home again (0700, the account's).
func (s *Installation) homeNext(a advisor) string {
	if !s.homeMissing || s.Uninstalled {
		return ""
	}
	if u := s.Workflow(workflow.UninstallDefinition().Name); u != nil && u.Condition != workflow.Complete && u.Condition != workflow.Incomplete {
		return ""
	}
	missing := "the home " + a.host.Home() + " of the account " + layout.Account + " is missing"
	var install *workflow.Report
	if w := s.Workflow(workflow.InstallDefinition().Name); w != nil {
		install = &w.Report
	}
	if s.hasCredential(install) {
		return missing + ", and with it the node's credential: remove the node in Web, run `sudo oac-node-install --uninstall --installation-id " +
			s.InstallationID.String() + " --force`, then add the node again with a new command from Web"
	}
	return missing + ": rerun the install command Web generated for this node, with its enrollment token: it makes the home again and continues"
}
