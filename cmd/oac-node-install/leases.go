package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/status"
)

const leasesLong = `Show every Runtime generation's lease of every node on this host (or the one
named): the lease's state, the processes that hold it or wait for it, the
generation's records, and for every stuck generation the checks and commands
an operator runs next, in order. The node roots are read as the service
account, never as root, within seconds: a node root that process cannot read
in time (or at all) is shown with why.

Exit codes: 0 every node root was read; 1 leases itself failed; 2 a node
root could not be read.`

const leasesExample = `  sudo oac-node-install leases
  sudo oac-node-install leases --installation-id 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c --json`

func (c *cli) leasesCommand() *cobra.Command {
	return c.inspectCommand("leases", "Show the Runtime generations' leases, their holders, and what to run when one is stuck",
		leasesLong, leasesExample, prefixLeases, c.runLeases)
}

// runLeases prints every generation's lease, its holders, its records and,
// for every stuck case, what an operator checks or runs next
// (status.Leases).
func (c *cli) runLeases(ctx context.Context, f inspectFlags) error {
	doc, err := status.Leases(ctx, c.inspectOptions(f))
	if err != nil {
		return err
	}
	if f.json {
		err = writeJSON(c.stdout, doc)
	} else {
		printLeases(c.stdout, doc.Nodes)
	}
	if err == nil && doc.NeedsAttention() {
		return &quietExit{exitAttention}
	}
	return err
}

// printLeases prints the nodes' leases as text; every value read from the
// node root or /proc passes field.
func printLeases(w io.Writer, nodes []status.NodeLeases) {
	if len(nodes) == 0 {
		fmt.Fprintln(w, "No node on this host.")
		return
	}
	for i, n := range nodes {
		if i > 0 {
			fmt.Fprintln(w)
		}
		printNode(w, n)
	}
}

func printNode(w io.Writer, n status.NodeLeases) {
	color := colorFor(w)
	fmt.Fprintf(w, "  %s (%s)\n", paint(color, styleBold, "node "+field(n.InstallationID.String())), field(n.NodeRoot))
	if n.Error != "" {
		fmt.Fprintf(w, "    %s %s\n", paint(color, styleRed+styleBold, "error:"), field(n.Error))
	}
	if len(n.Generations) == 0 && n.Error == "" {
		fmt.Fprintln(w, "    no generation records")
	}
	for _, g := range n.Generations {
		printGeneration(w, g)
	}
}

func printGeneration(w io.Writer, g lease.GenerationReport) {
	fmt.Fprintf(w, "    generation %d\n", g.Generation)
	l := g.Lease
	color := colorFor(w)
	line := paint(color, conditionStyle(string(l.State)), field(string(l.State)))
	if l.Reason != "" {
		line += ": " + field(l.Reason)
	}
	fmt.Fprintf(w, "      lease:    %s\n", line)
	if l.Path != "" {
		fmt.Fprintf(w, "                %s", field(l.Path))
		if l.LockKey != "" {
			fmt.Fprintf(w, " (%s)", field(l.LockKey))
		}
		fmt.Fprintln(w)
	}
	if len(g.Holders) == 0 {
		fmt.Fprintln(w, "      holders:  none")
	}
	for _, h := range g.Holders {
		fmt.Fprintf(w, "      holder:   %s\n", holderLine(h))
	}
	fmt.Fprintf(w, "      records:  %s\n", recordsLine(g.Records))
	for _, p := range g.Records.Problems {
		fmt.Fprintf(w, "      refused:  %s: %s\n", field(p.Path), field(p.Reason))
	}
	for i, n := range g.Next {
		label := "      " + paint(color, styleGold+styleBold, "next:") + "    "
		if i > 0 {
			label = "               "
		}
		fmt.Fprintf(w, "%s %s\n", label, field(n))
	}
}

// holderLine describes a lease holder; its command is argv[0] of a process
// that may belong to the service account, which sets it freely.
func holderLine(h lease.Holder) string {
	s := fmt.Sprintf("pid %d (%s), uid %d, %s", h.PID, field(h.Command), h.UID, field(h.Mode))
	if h.Waiting {
		s += ", waiting"
	}
	if h.Source != "" {
		s += ", from " + field(h.Source)
	}
	return s
}

func recordsLine(r lease.RecordState) string {
	var s []string
	if r.Preparing {
		s = append(s, fmt.Sprintf("preparing (import started: %v)", r.ImportStarted))
	}
	if r.Prepared {
		s = append(s, "prepared")
	}
	if r.Base {
		s = append(s, "base generation (configured by provider.json)")
	}
	if r.Collecting {
		s = append(s, fmt.Sprintf("collecting (native removal complete: %v)", r.NativeComplete))
	}
	if r.Dropped {
		s = append(s, "dropped")
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
