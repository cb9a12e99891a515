package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/generation"
	"github.com/openagentcore/oac-node-install/steps/record/bootstrap"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

const statusLong = `Show, for every installation on this host (or the one named), the state of
its workflow journals — root's install and uninstall, and the node's prepare,
repair and collect, each "running" while a live process holds its lock —
its unit as systemd reports it, its registration and Core's view of it (read
as the service account, at most 5 s), what the installer's bookkeeping
records, and its Runtime generations' leases. An installation that needs
attention is shown with the one thing to run or check next. status changes
nothing; systemd or Core that cannot be reached are shown, and are no reason
for attention by themselves.

Exit codes, for scripts and fleet tools (like systemctl is-active):
  0  every installation is complete and healthy, or running (or there is none)
  1  status itself failed (a bad flag, a file it could not read)
  2  something needs attention: a workflow that is not complete (failed,
     interrupted or waiting for inspection), a node root that cannot be
     read, a stuck generation lease, or an installed node whose
     registration, unit or Core connection is not healthy (removed in Core,
     not connected, provider not ready)`

const statusExample = `  sudo oac-node-install status
  sudo oac-node-install status --installation-id 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c
  sudo oac-node-install status --json | jq '.installations[] | select(.condition != "ok")'`

func (c *cli) statusCommand() *cobra.Command {
	return c.inspectCommand("status", "Show every installation's workflows and leases, and what needs attention",
		statusLong, statusExample, prefixStatus, c.runStatus)
}

// statusDocument is `status --json` (CONTRACT §10).
type statusDocument struct {
	Format        int                  `json:"format"`
	Installations []installationStatus `json:"installations"`
}

// Installation conditions.
const (
	conditionOK        = "ok"
	conditionAttention = "needs-attention"
	// conditionRunning: a workflow of the installation is running (a live
	// process holds its journal's lock) and nothing else needs attention.
	conditionRunning = "running"
)

// installationStatus is one installation: its workflow journals, root's
// first, what root's records, systemd, the node root and Core say of it,
// its node root's leases, and whether it needs attention.
type installationStatus struct {
	InstallationID string `json:"installation_id"`
	// Condition is "ok", "needs-attention" or "running".
	Condition string `json:"condition"`
	// Next is, when the installation needs attention, the one command to run
	// or thing to check next.
	Next string `json:"next,omitempty"`
	// Uninstalled is set once an uninstallation completed and the node
	// was not installed again.
	Uninstalled bool             `json:"uninstalled,omitempty"`
	Workflows   []workflowStatus `json:"workflows"`
	// Bookkeeping is what installer.db records (read-only).
	Bookkeeping *bookkeepingStatus `json:"bookkeeping"`
	// Unit is systemd's view of the node's unit; absent once uninstalled.
	Unit *unitStatus `json:"unit,omitempty"`
	// Registration and Core are read as the service account; absent when
	// the host has no node root for the installation.
	Registration *generation.Registration `json:"registration,omitempty"`
	Core         *generation.CoreView     `json:"core,omitempty"`
	// Node is the node root's leases; absent when the host has no node root
	// for the installation.
	Node *nodeLeases `json:"node,omitempty"`

	record    *hostRecord
	recordErr error
}

// runStatus prints the state of every installation on the host and ends
// with exit 2 (quietExit) when one of them needs attention. It writes
// nothing: journals are scanned, locks only looked up in /proc/locks, the
// bookkeeping opened read-only, systemd and Core only asked.
func (c *cli) runStatus(ctx context.Context, f inspectFlags) error {
	host := c.host()
	byID := map[string]*installationStatus{}
	get := func(id string) *installationStatus {
		s := byID[id]
		if s == nil {
			s = &installationStatus{InstallationID: id, Workflows: []workflowStatus{}}
			byID[id] = s
		}
		return s
	}
	want := func(id string) bool { return f.installationID == "" || id == f.installationID }
	// Root's journals (install, uninstall) are root's own files.
	paths, err := findJournals(host, f.installationID)
	if err != nil {
		return err
	}
	for _, p := range paths {
		s := get(filepath.Base(filepath.Dir(p)))
		s.Workflows = append(s.Workflows, inspectWorkflow(p))
	}
	books := readBookkeeping(host)
	for _, id := range append(recordIDs(host), books.ids()...) {
		if want(id) {
			get(id)
		}
	}
	records := map[string]*hostRecord{}
	for id, s := range byID {
		s.record, s.recordErr = readHostRecord(host, id)
		if !s.uninstalled() {
			records[id] = s.record
		}
	}
	// The node roots' journals, leases and registration belong to the
	// service account: read as that account, which also asks Core at
	// root's address of it. Each journal is listed once, among the
	// installation's workflows.
	nodes, err := readNodesAs(ctx, host, books, inspectRequest{InstallationID: f.installationID, Journals: true, Leases: true,
		Status: true, Core: coreRequests(records)}, c.stderr)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		s := get(n.InstallationID)
		s.Workflows = append(s.Workflows, n.Journals...)
		leases := n.nodeLeases
		s.Node = &leases
		s.Registration = n.Registration
		if !s.uninstalled() {
			s.Core = n.Core
		}
	}
	var present []string
	for id, s := range byID {
		s.Bookkeeping = books.forInstallation(host, id)
		if !s.uninstalled() {
			present = append(present, id)
		}
	}
	for id, u := range readUnits(ctx, present) {
		byID[id].Unit = u
	}
	doc := statusDocument{Format: jsonFormat, Installations: []installationStatus{}}
	for _, s := range byID {
		s.assess(host)
		doc.Installations = append(doc.Installations, *s)
	}
	sort.Slice(doc.Installations, func(i, j int) bool {
		return doc.Installations[i].InstallationID < doc.Installations[j].InstallationID
	})
	if f.json {
		err = writeJSON(c.stdout, doc)
	} else {
		printStatus(c.stdout, doc.Installations)
	}
	if err != nil {
		return err
	}
	for _, s := range doc.Installations {
		if s.Condition == conditionAttention {
			return &quietExit{exitAttention}
		}
	}
	return nil
}

// findJournals lists root's journal files of one or every installation:
// /var/lib/oac-node-install/<id>/*.journal, for canonical ids.
func findJournals(host layout.Host, id string) ([]string, error) {
	ids := "*"
	if id != "" {
		ids = id
	}
	pattern := filepath.Join(host.JournalsRoot(), ids, "*.journal")
	m, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("list journals %s: %w", pattern, err)
	}
	var out []string
	for _, p := range m {
		if validateInstallationID(filepath.Base(filepath.Dir(p))) != nil {
			continue
		}
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// workflow returns the report of root's journal of the named workflow.
func (s *installationStatus) workflow(name string) *workflowStatus {
	for i := range s.Workflows {
		if w := &s.Workflows[i]; w.Workflow == name && filepath.Base(w.Journal) == name+".journal" {
			return w
		}
	}
	return nil
}

// uninstalled reports whether an uninstallation completed and the node was
// not installed again: the uninstallation keeps the install journal aside,
// so an install journal beside a complete uninstall journal is newer.
func (s *installationStatus) uninstalled() bool {
	u := s.workflow(workflow.UninstallDefinition().Name)
	return u != nil && u.Condition == workflow.Complete && s.workflow(workflow.InstallDefinition().Name) == nil
}

// installed reports whether the installation is meant to be running: its
// install journal is complete or, without one, the host records it.
func (s *installationStatus) installed() bool {
	if u := s.workflow(workflow.UninstallDefinition().Name); u != nil && u.Condition != workflow.Complete {
		return false
	}
	if in := s.workflow(workflow.InstallDefinition().Name); in != nil {
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
func (s *installationStatus) assess(host layout.Host) {
	s.Condition, s.Next = conditionOK, ""
	s.Uninstalled = s.uninstalled()
	next := s.attention(host)
	running := false
	for _, w := range s.Workflows {
		running = running || w.Running != nil
	}
	switch {
	case next != "":
		s.Condition, s.Next = conditionAttention, next
	case running:
		s.Condition = conditionRunning
	}
}

// attention is the one next step the installation needs, or "".
func (s *installationStatus) attention(host layout.Host) string {
	id := s.InstallationID
	rootRunning := false
	// A generation whose prepare, repair or collect runs is held by it:
	// its lease's state is that run's, not a stuck one.
	busy := map[int64]bool{}
	for _, w := range s.Workflows {
		rootRunning = rootRunning || w.Running != nil && filepath.Dir(w.Journal) == host.JournalDir(id)
		if w.Running != nil && w.Binding != nil && w.Binding.Generation > 0 && filepath.Dir(w.Journal) != host.JournalDir(id) {
			busy[w.Binding.Generation] = true
		}
	}
	if b := s.Bookkeeping; b != nil && b.AccountMismatch != "" && !rootRunning {
		return b.AccountMismatch // every install or uninstall refuses until it is mended
	}
	for _, cond := range []workflow.Condition{workflow.NeedsInspection, workflow.Failed, workflow.Resumable} {
		for _, w := range s.Workflows {
			if w.Running == nil && w.Condition == cond {
				return s.workflowNext(host, &w.Report)
			}
		}
	}
	if s.recordErr != nil {
		return "inspect " + host.Record(id) + ": " + s.recordErr.Error()
	}
	if b := s.Bookkeeping; b != nil && b.State == bookkeepingDamaged {
		return bookkeeping.DamagedAdvice(b.Database, id)
	}
	if b := s.Bookkeeping; b != nil && b.State == bookkeepingError {
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
		return rerun + ": the node root " + host.NodeRoot(id) + " is missing"
	case r.State == generation.RegistrationInvalid:
		return "inspect " + layout.Node{Root: host.NodeRoot(id)}.Identity() + ": the node's registration is refused (why is shown with the registration)"
	case r.State != generation.RegistrationDone:
		return s.continueInstall(host, nil) + " (the node's registration was not confirmed)"
	}
	if c := s.Core; c != nil && c.State == generation.CoreRemoved {
		return "the node was removed in Core (HTTP 401); remove it from this host: sudo oac-node-install --uninstall --installation-id " + id
	}
	if u := s.Unit; u != nil && u.Reachable {
		if next := unitNext(u, unit); next != "" {
			return next
		}
	}
	if c := s.Core; c != nil {
		switch c.State {
		case generation.CoreNotConnected:
			return "Core reports the node not connected; see the node service's log: sudo journalctl -xeu " + unit
		case generation.CoreProviderNotReady:
			return providerNext(c.Diagnostic, unit)
		}
	}
	return ""
}

// unitNext is what to do about a node unit that is not active, or "".
func unitNext(u *unitStatus, unit string) string {
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
		return "rerun the install command Web generated for this node: systemd has no unit " + unit + " (" + u.LoadState + ")"
	case u.ActiveState == "active":
		return ""
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
func (s *installationStatus) workflowNext(host layout.Host, r *workflow.Report) string {
	id := s.InstallationID
	root := filepath.Dir(r.Journal) == host.JournalDir(id)
	if r.Condition == workflow.NeedsInspection {
		if !root {
			return "inspect " + r.Journal + ": the node refuses to continue this journal of its own until an operator has judged it (its note is shown with it)"
		}
		return "inspect " + r.Journal + ": " + r.Note
	}
	unit := layout.UnitName(id)
	switch r.Workflow {
	case workflow.InstallDefinition().Name:
		return s.continueInstall(host, r)
	case workflow.UninstallDefinition().Name:
		return "sudo oac-node-install --uninstall --installation-id " + id
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
// (installCommandFromRecord); the node program confirms the identity it
// wrote with Core. Before, and on a host without the record, the node
// still needs its enrollment token: the command Web generated.
func (s *installationStatus) continueInstall(host layout.Host, r *workflow.Report) string {
	withToken := "rerun the install command Web generated for this node, with its enrollment token: it continues where it stopped"
	if s.record == nil || s.recordErr != nil || !s.hasCredential(r) {
		return withToken
	}
	cmd, ok := installCommandFromRecord(host, s.InstallationID, s.record)
	if !ok {
		return withToken + " (the host record " + host.Record(s.InstallationID) + " holds a value the command does not accept: inspect it)"
	}
	return "continue the installation without a token, since the node has its credential (for " + consolePlaceholder + " give the --source-url of the command Web generated: this host does not record it): " + cmd.String()
}

// hasCredential reports whether the node has its credential, so that the
// install command needs no token: root's bookkeeping or install journal
// says the node registered or its register step began (the node program
// writes the identity before it enrolls), or the node root holds its
// identity. The last is the account's word: it only chooses which of two
// commands root names, each built from root's own records.
func (s *installationStatus) hasCredential(r *workflow.Report) bool {
	if b := s.Bookkeeping; b != nil && b.Installation != nil && b.Installation.Registered {
		return true
	}
	if r != nil && registerBegun(r) {
		return true
	}
	reg := s.Registration
	return reg != nil && (reg.State == generation.RegistrationPending || reg.State == generation.RegistrationDone)
}

// registerBegun reports whether an install journal's register step began
// or is done.
func registerBegun(r *workflow.Report) bool {
	return r.Attempts[string(workflow.InstallRegister)] > 0
}

// installCommandFromRecord is the install command, without a token, of
// installation id as root's host record describes it, by the name the
// host keeps the installer under (CONTRACT §10), as in status's other
// advice: Core's origin and
// insecure-origin policy, the provider, and a Core CA when the record has
// one: the node's copy, <node root>/core-ca.pem, which the command reads
// and refuses unless its sha256 is the one root recorded, before any
// request. The console URL is recorded nowhere root owns: it is left for
// the operator. ok is false when a recorded value is not one the command
// accepts; nothing of the record reaches the advice unchecked.
func installCommandFromRecord(host layout.Host, id string, rec *hostRecord) (installCommand, bool) {
	c := installCommand{program: "oac-node-install", installationID: id, coreURL: rec.CoreURL,
		allowInsecureOrigin: rec.AllowInsecureOrigin, provider: rec.Provider}
	if origin, _, err := validateOrigin("core_url", rec.CoreURL, rec.AllowInsecureOrigin); err != nil || origin != rec.CoreURL {
		return c, false
	}
	switch rec.Provider {
	case "docker", "microsandbox":
	default:
		return c, false
	}
	if validateInstallationID(id) != nil {
		return c, false
	}
	if rec.CoreCASHA256 != "" {
		c.coreCA = layout.Node{Root: host.NodeRoot(id)}.CoreCA()
		if !plainAbs(c.coreCA) {
			return c, false
		}
	}
	return c, true
}

// installCommand is an install command line without a token; each value
// is one the install command accepts.
type installCommand struct {
	program string
	// sourceURL or bundle is where the node's files come from; with
	// neither, the console URL is left for the operator to fill in.
	sourceURL, bundle   string
	coreURL             string
	allowInsecureOrigin bool
	coreCA              string
	provider            string // "" when the command names none
	installationID      string
}

// consolePlaceholder stands for the console URL the host does not record.
const consolePlaceholder = "<console URL>"

// String is the command as the operator types it: every value quoted for
// the shell where it needs to be.
func (c installCommand) String() string {
	args := []string{"sudo", c.program}
	switch {
	case c.bundle != "":
		args = append(args, "--"+flagBundle, shellWord(c.bundle))
	case c.sourceURL != "":
		args = append(args, "--"+flagSourceURL, shellWord(c.sourceURL))
	default:
		args = append(args, "--"+flagSourceURL, consolePlaceholder)
	}
	args = append(args, "--"+flagCoreURL, shellWord(c.coreURL))
	if c.allowInsecureOrigin {
		args = append(args, "--"+flagAllowInsecureOrigin)
	}
	if c.coreCA != "" {
		args = append(args, "--"+flagCoreCA, shellWord(c.coreCA))
	}
	if c.provider != "" {
		args = append(args, "--"+flagProvider, shellWord(c.provider))
	}
	return strings.Join(append(args, "--"+flagInstallationID, c.installationID), " ")
}

// programName is how this program was started (argv[0]), which runs it
// again from the same shell: the Web command runs it from its download
// cache, and an installation interrupted early may not have left
// oac-node-install on the host's PATH yet. A name with a control character
// is replaced by oac-node-install.
func programName() string {
	name := os.Args[0]
	if name == "" || strings.IndexFunc(name, unicode.IsControl) >= 0 || !utf8.ValidString(name) {
		return "oac-node-install"
	}
	return shellWord(name)
}

// shellWord is s as one word for a POSIX shell: as it is when it holds
// only characters no shell treats specially, else single-quoted.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:@%+=,", r))
	}) < 0 {
		return s
	}
	return bootstrap.Quote(s)
}
