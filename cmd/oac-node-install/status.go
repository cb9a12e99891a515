package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/openagentcore/oac-node-install/steps/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// statusFlags are the flags of `status`.
type statusFlags struct {
	installationID string
	json           bool
	hostRoot       string
}

func parseStatusFlags(args []string) (statusFlags, error) {
	var f statusFlags
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.installationID, "installation-id", "", "only this installation")
	fs.BoolVar(&f.json, "json", false, "print JSON")
	fs.StringVar(&f.hostRoot, "host-root", "/", "root of the host's paths (tests)")
	if err := fs.Parse(args); err != nil {
		return f, usagef("status: %v", err)
	}
	if fs.NArg() > 0 {
		return f, usagef("status: unexpected argument %q", fs.Arg(0))
	}
	if f.installationID != "" {
		if err := validateInstallationID(f.installationID); err != nil {
			return f, err
		}
	}
	return f, nil
}

// runStatus prints the state of every workflow journal on the host: root's
// (install, uninstall) and the node roots' (prepare, repair, collect).
func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseStatusFlags(args)
	if err != nil {
		return err
	}
	host := layout.Host{Root: f.hostRoot}
	paths, err := findJournals(host, f.installationID)
	if err != nil {
		return err
	}
	reports := make([]*workflow.Report, 0, len(paths))
	for _, p := range paths {
		rep, err := workflow.InspectJournal(p, workflow.Lookup)
		if err != nil {
			rep = &workflow.Report{Journal: p, Condition: workflow.NeedsInspection, Note: "cannot read: " + err.Error()}
		}
		reports = append(reports, rep)
	}
	// The node roots' journals (prepare, repair, collect) and leases belong
	// to the service account: read them as that account.
	nodes, err := readNodes(ctx, host, inspectRequest{InstallationID: f.installationID, Journals: true, Leases: true}, stderr)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		reports = append(reports, n.Journals...)
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Workflows []*workflow.Report `json:"workflows"`
			Nodes     []nodeInspection   `json:"nodes"`
		}{reports, nodes})
	}
	printReports(stdout, reports)
	for _, n := range nodes {
		if len(n.Generations) > 0 || n.Error != "" {
			fmt.Fprintln(stdout)
			printLeases(stdout, []nodeInspection{n})
		}
	}
	return nil
}

// findJournals lists the journal files of one or every installation.
func findJournals(host layout.Host, id string) ([]string, error) {
	var out []string
	glob := func(pattern string) error {
		m, err := filepath.Glob(pattern)
		if err != nil {
			return err
		}
		for _, p := range m {
			if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
				out = append(out, p)
			}
		}
		return nil
	}
	ids := "*"
	if id != "" {
		ids = id
	}
	if err := glob(filepath.Join(host.JournalsRoot(), ids, "*.journal")); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

func printReports(w io.Writer, reports []*workflow.Report) {
	if len(reports) == 0 {
		fmt.Fprintln(w, "No workflow journals on this host.")
		return
	}
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(w)
		}
		name := r.Workflow
		if name == "" {
			name = "(unknown)"
		}
		fmt.Fprintf(w, "%s: %s\n", name, r.Condition)
		if b := r.Binding; b != nil {
			fmt.Fprintf(w, "  installation:  %s\n", b.InstallationID)
			if b.Generation != 0 {
				fmt.Fprintf(w, "  generation:    %d (specification %s)\n", b.Generation, short(b.SpecificationDigest))
			}
			fmt.Fprintf(w, "  written by:    oac-node-install %s\n", b.Version)
		}
		if r.State != "" {
			fmt.Fprintf(w, "  state:         %s\n", r.State)
		}
		var steps []string
		for _, c := range r.Completed {
			s := c.Step
			if c.Attempts > 1 {
				s += fmt.Sprintf(" (%d attempts)", c.Attempts)
			}
			steps = append(steps, s)
		}
		if len(steps) > 0 {
			fmt.Fprintf(w, "  completed:     %s\n", strings.Join(steps, ", "))
		}
		if p := r.Pending; p != nil {
			how := "interrupted"
			if p.Failed {
				how = "failed"
			}
			fmt.Fprintf(w, "  pending:       %s (%s, policy %s, attempt %d, began %s)\n", p.Step, how, r.Policy, p.Attempt, stamp(p.Began))
		}
		if e := r.LastError; e != nil {
			fmt.Fprintf(w, "  last error:    %s: %s [%s] at %s\n", e.Step, e.Error, e.Class, stamp(e.Time))
		}
		if !r.Updated.IsZero() {
			fmt.Fprintf(w, "  updated:       %s\n", stamp(r.Updated))
		}
		if r.Note != "" {
			fmt.Fprintf(w, "  note:          %s\n", r.Note)
		}
		fmt.Fprintf(w, "  journal:       %s\n", r.Journal)
	}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
