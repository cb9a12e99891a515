package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/openagentcore/oac-node-install/steps/status"
)

// printStatus prints the installations as text; every value read from a
// journal, the node root, the bookkeeping, systemd or Core passes field.
func printStatus(w io.Writer, insts []status.Installation) {
	if len(insts) == 0 {
		fmt.Fprintln(w, "No installation on this host.")
		return
	}
	for i, s := range insts {
		if i > 0 {
			fmt.Fprintln(w)
		}
		cond := s.Condition
		switch {
		case s.Condition == status.ConditionAttention:
			cond = "needs attention"
		case s.Uninstalled:
			cond += " (uninstalled)"
		}
		color := colorFor(w)
		fmt.Fprintf(w, "%s: %s\n", paint(color, styleBold, "installation "+field(s.InstallationID.String())), paint(color, conditionStyle(s.Condition), cond))
		if s.Next != "" {
			fmt.Fprintf(w, "  %s          %s\n", paint(color, styleGold+styleBold, "next:"), field(s.Next))
		}
		if s.Unit != nil {
			fmt.Fprintf(w, "  unit:          %s\n", unitLine(s.Unit))
		}
		if r := s.Registration; r != nil {
			fmt.Fprintf(w, "  registration:  %s\n", registrationLine(r))
		}
		if c := s.Core; c != nil {
			fmt.Fprintf(w, "  core:          %s\n", coreLine(c))
		}
		if b := s.Bookkeeping; b != nil {
			printBookkeeping(w, b)
		}
		if m := s.Made; m != nil {
			fmt.Fprintf(w, "    home:        %s\n", field(m.Home))
			fmt.Fprintf(w, "    node root:   %s\n", field(m.NodeRoot))
			fmt.Fprintf(w, "    journals:    %s\n", field(m.Journals))
			if m.Image != "" {
				fmt.Fprintf(w, "    image:       %s\n", field(m.Image))
			}
		}
		for _, r := range s.Workflows {
			fmt.Fprintln(w)
			printReport(w, r)
		}
		if n := s.Node; n != nil && (len(n.Generations) > 0 || n.Error != "") {
			fmt.Fprintln(w)
			printNode(w, *n)
		}
	}
}

// unitLine is systemd's view of the unit in one line.
func unitLine(u *status.UnitStatus) string {
	if !u.Reachable {
		return field(u.Name) + ": systemd not reachable (" + field(u.Error) + ")"
	}
	s := fmt.Sprintf("%s: %s (%s)", field(u.Name), field(u.ActiveState), field(u.SubState))
	if u.LoadState != "loaded" {
		return s + ", " + field(u.LoadState)
	}
	if u.UnitFileState != "" {
		s += ", " + field(u.UnitFileState)
	}
	if u.Result != "" {
		s += ", result " + field(u.Result)
	}
	s += fmt.Sprintf(", %d restarts", u.NRestarts)
	if u.LastExit != "" {
		s += ", last " + field(u.LastExit)
	}
	return s
}

func registrationLine(r *status.Registration) string {
	s := field(r.State)
	if r.NodeID != "" {
		s += ", node " + field(r.NodeID)
	}
	if r.Error != "" {
		s += ": " + field(r.Error)
	}
	return s
}

func coreLine(c *status.CoreView) string {
	var s string
	if c.URL != "" {
		s = field(c.URL) + ": "
	}
	switch c.State {
	case status.CoreReady, status.CoreProviderNotReady, status.CoreNotConnected:
		switch {
		case !c.Connected:
			s += "not connected"
		case c.ProviderReady:
			s += "connected, provider ready"
		default:
			s += "connected, provider not ready"
		}
		if c.Diagnostic != "" {
			s += " (" + field(c.Diagnostic) + ")"
		}
	case status.CoreRemoved:
		s += "removed in Core (HTTP 401: the node's credential is no longer accepted)"
	case status.CoreUnreachable:
		s += "unreachable (" + field(c.Error) + ")"
	default:
		s += field(c.State)
		if c.Error != "" {
			s += " (" + field(c.Error) + ")"
		}
	}
	return s
}

func printBookkeeping(w io.Writer, b *status.BookkeepingStatus) {
	switch b.State {
	case status.BookkeepingNone:
		fmt.Fprintf(w, "  bookkeeping:   none (%s does not exist)\n", field(b.Database))
		return
	case status.BookkeepingPresent:
	default:
		fmt.Fprintf(w, "  bookkeeping:   %s: %s\n", field(b.State), field(b.Error))
		return
	}
	if b.Installation == nil {
		fmt.Fprintf(w, "  bookkeeping:   no entry for this installation in %s\n", field(b.Database))
	} else {
		fmt.Fprintf(w, "  bookkeeping:   %s provider, recorded %s\n", field(b.Installation.Provider), stamp(b.Installation.Created))
	}
	if a := b.Account; a != nil {
		how := "adopted by the installer"
		if a.Created {
			how = "created by the installer"
		}
		fmt.Fprintf(w, "    account:     %s (uid %d), %s\n", field(a.Name), a.UID, how)
	}
	if len(b.GroupsAdded) > 0 {
		var gs []string
		for _, g := range b.GroupsAdded {
			gs = append(gs, field(g))
		}
		fmt.Fprintf(w, "    groups:      %s (added by the installer)\n", strings.Join(gs, ", "))
	}
	for _, f := range b.Files {
		fmt.Fprintf(w, "    file:        %s %s\n", field(f.Kind), field(f.Path))
	}
	for _, n := range b.Networks {
		fmt.Fprintf(w, "    network:     %s\n", field(n))
	}
}

func printReport(w io.Writer, ws status.WorkflowStatus) {
	r := &ws.Report
	name := r.Workflow
	if name == "" {
		name = "(unknown)"
	}
	cond := field(string(r.Condition))
	if ws.Running != nil {
		cond = "running"
	}
	fmt.Fprintf(w, "  %s: %s\n", field(name), paint(colorFor(w), conditionStyle(cond), cond))
	if p := ws.Running; p != nil {
		if p.Command == "" && p.UID < 0 {
			// The locker exited; a process it started holds the lock.
			fmt.Fprintf(w, "    running:       pid %d took the lock and exited; a process it started holds it\n", p.PID)
		} else {
			fmt.Fprintf(w, "    running:       pid %d (%s), uid %d\n", p.PID, field(p.Command), p.UID)
		}
	}
	if b := r.Binding; b != nil {
		if b.Generation != 0 {
			fmt.Fprintf(w, "    generation:    %d (specification %s)\n", b.Generation, field(short(b.SpecificationDigest)))
		}
		fmt.Fprintf(w, "    written by:    oac-node-install %s\n", field(b.Version))
	}
	if r.State != "" {
		fmt.Fprintf(w, "    state:         %s\n", field(string(r.State)))
	}
	var steps []string
	for _, c := range r.Completed {
		s := field(c.Step)
		if c.Attempts > 1 {
			s += fmt.Sprintf(" (%d attempts)", c.Attempts)
		}
		steps = append(steps, s)
	}
	if len(steps) > 0 {
		fmt.Fprintf(w, "    completed:     %s\n", strings.Join(steps, ", "))
	}
	if p := r.Pending; p != nil {
		how := "interrupted"
		switch {
		case ws.Running != nil:
			how = "in progress"
		case p.Failed:
			how = "failed"
		}
		fmt.Fprintf(w, "    pending:       %s (%s, policy %s, attempt %d, began %s)\n", field(p.Step), how, field(r.Policy), p.Attempt, stamp(p.Began))
	}
	if e := r.LastError; e != nil {
		fmt.Fprintf(w, "    last error:    %s: %s [%s] at %s\n", field(e.Step), field(e.Error), field(e.Class), stamp(e.Time))
	}
	if !r.Updated.IsZero() {
		fmt.Fprintf(w, "    updated:       %s\n", stamp(r.Updated))
	}
	if r.Note != "" {
		fmt.Fprintf(w, "    note:          %s\n", field(r.Note))
	}
	if t := r.TornTail; t != nil {
		fmt.Fprintf(w, "    torn tail:     %s\n", field(t.String()))
	}
	if t := r.LastCut; t != nil {
		fmt.Fprintf(w, "    last cut:      %s\n", field(t.String()))
	}
	fmt.Fprintf(w, "    journal:       %s\n", field(r.Journal))
}

// conditionStyle is how a terminal shows an installation's condition, a
// workflow's or a lease's state: good green, running cyan, resumable gold,
// anything else (needs attention, failed, needs inspection, a lease that
// is not ok) red. The words are the same without colour.
func conditionStyle(cond string) string {
	switch cond {
	case status.ConditionOK, "complete":
		return styleGreen
	case status.ConditionRunning:
		return styleCyan
	case "resumable":
		return styleGold
	}
	return styleRed + styleBold
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
