package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/layout"
	"github.com/openagentcore/oac-node-install/steps/lease"
)

// runLeases prints every generation's lease, its holders, its records and,
// for every stuck case, what an operator checks or runs next.
func runLeases(ctx context.Context, args []string, stdout io.Writer) error {
	f, err := parseStatusFlags(args)
	if err != nil {
		return err
	}
	host := layout.Host{Root: f.hostRoot}
	req := inspectRequest{InstallationID: f.installationID, Leases: true}
	if f.json {
		raw, err := readNodesJSON(ctx, host, req, os.Stderr)
		if err != nil {
			return err
		}
		return writeNodesJSON(stdout, raw)
	}
	nodes, err := readNodes(ctx, host, req, os.Stderr)
	if err != nil {
		return err
	}
	printLeases(stdout, nodes)
	return nil
}

// writeNodesJSON prints {"nodes": [...]} from the nodes as JSON, compact
// (one line), as the service-account child produced it.
func writeNodesJSON(w io.Writer, raw json.RawMessage) error {
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	buf := make([]byte, 0, len(raw)+16)
	buf = append(buf, `{"nodes":`...)
	buf = append(buf, raw...)
	buf = append(buf, "}\n"...)
	_, err := w.Write(buf)
	return err
}

func printLeases(w io.Writer, nodes []nodeInspection) {
	if len(nodes) == 0 {
		fmt.Fprintln(w, "No node on this host.")
		return
	}
	for i, n := range nodes {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "node %s (%s)\n", n.InstallationID, n.NodeRoot)
		if n.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", n.Error)
		}
		if len(n.Generations) == 0 && n.Error == "" {
			fmt.Fprintln(w, "  no generation records")
		}
		for _, g := range n.Generations {
			printGeneration(w, g)
		}
	}
}

func printGeneration(w io.Writer, g lease.GenerationReport) {
	fmt.Fprintf(w, "  generation %d\n", g.Generation)
	l := g.Lease
	line := string(l.State)
	if l.Reason != "" {
		line += ": " + l.Reason
	}
	fmt.Fprintf(w, "    lease:    %s\n", line)
	if l.Path != "" {
		fmt.Fprintf(w, "              %s", l.Path)
		if l.LockKey != "" {
			fmt.Fprintf(w, " (%s)", l.LockKey)
		}
		fmt.Fprintln(w)
	}
	if len(g.Holders) == 0 {
		fmt.Fprintln(w, "    holders:  none")
	}
	for _, h := range g.Holders {
		fmt.Fprintf(w, "    holder:   %s\n", holderLine(h))
	}
	fmt.Fprintf(w, "    records:  %s\n", recordsLine(g.Records))
	for _, p := range g.Records.Problems {
		fmt.Fprintf(w, "    refused:  %s: %s\n", p.Path, p.Reason)
	}
	for i, n := range g.Next {
		label := "    next:    "
		if i > 0 {
			label = "             "
		}
		fmt.Fprintf(w, "%s %s\n", label, n)
	}
}

func holderLine(h lease.Holder) string {
	s := fmt.Sprintf("pid %d (%s), uid %d, %s", h.PID, h.Command, h.UID, h.Mode)
	if h.Waiting {
		s += ", waiting"
	}
	if h.Source != "" {
		s += ", from " + h.Source
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
