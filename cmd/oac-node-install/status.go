package main

import (
	"context"
	"fmt"
	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/openagentcore/oac-node-install/steps/generation"
	"github.com/openagentcore/oac-node-install/steps/layout"
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
	nodes, err := readNodes(ctx, host, inspectRequest{InstallationID: f.installationID, Journals: true, Leases: true,
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
	for _, cond := range []workflow.Condition{workflow.NeedsInspection, workflow.Failed, workflow.Resumable} {
		for _, w := range s.Workflows {
			if w.Running == nil && w.Condition == cond {
				return workflowNext(host, id, &w.Report)
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
		if n.Error != "" {
			return "check the node root " + n.NodeRoot + ": " + n.Error
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
		return "inspect " + layout.Node{Root: host.NodeRoot(id)}.Identity() + ": " + r.Error
	case r.State != generation.RegistrationDone:
		return rerun + ": the node's registration was not confirmed"
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

// workflowNext is what to do about a workflow journal that is not complete.
func workflowNext(host layout.Host, id string, r *workflow.Report) string {
	if r.Condition == workflow.NeedsInspection {
		return "inspect " + r.Journal + ": " + r.Note
	}
	switch r.Workflow {
	case workflow.InstallDefinition().Name:
		return "rerun the install command Web generated for this node: it continues where it stopped"
	case workflow.UninstallDefinition().Name:
		return "sudo oac-node-install --uninstall --installation-id " + id
	case workflow.PrepareDefinition().Name, workflow.RepairDefinition().Name, workflow.CollectDefinition().Name:
		if b := r.Binding; b != nil {
			helper := layout.Node{Root: host.NodeRoot(id)}.Helper()
			return fmt.Sprintf("the node retries it; to run it now: sudo -u %s %s --generation-action %s --generation %d --specification-digest %s --installation-id %s",
				layout.Account, helper, r.Workflow, b.Generation, b.SpecificationDigest, id)
		}
	}
	return "rerun the command that wrote " + r.Journal
}
