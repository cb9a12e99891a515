package status

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// Options say which host and installations status and leases read, and
// how root runs the service account's child that reads the node roots.
type Options struct {
	// Host is the set of host paths read.
	Host layout.Host
	// InstallationID, when set, reads only that installation (a canonical
	// UUID the command line checked).
	InstallationID ident.InstallationID
	// Output receives the child's stdout and stderr, sanitized
	// (privsep.Options.Output).
	Output io.Writer
	// Signals is the child's signal source (privsep.Options.Signals).
	Signals <-chan os.Signal
	// Timeout bounds the child; 0 is DefaultTimeout.
	Timeout time.Duration
	// Systemd connects to systemd (Gather only); nil dials the host's
	// system bus.
	Systemd func(context.Context) (UnitReader, error)
	// InstallCommand (Gather only) spells the install command, without a
	// token, that continues installation id from root's host record rec,
	// for a node that has its credential; ok is false when a recorded
	// value is not one the command accepts. The command line owns its
	// flags and what they accept, so it spells the command; Gather decides
	// when to name it. Nil names the command Web generated instead.
	InstallCommand func(h layout.Host, id ident.InstallationID, rec *hostrecord.Record) (cmd string, ok bool)
}

// Gather reads the state of every installation on the host (or the one
// named) and assesses each. It writes nothing: journals are scanned, locks
// only looked up in /proc/locks, the bookkeeping opened read-only, systemd
// and Core only asked. An error is status's own failure (exit 1); an
// installation that needs attention is in the document.
func Gather(ctx context.Context, o Options) (Document, error) {
	host := o.Host
	byID := map[ident.InstallationID]*Installation{}
	get := func(id ident.InstallationID) *Installation {
		s := byID[id]
		if s == nil {
			s = &Installation{InstallationID: id, Workflows: []WorkflowStatus{}}
			byID[id] = s
		}
		return s
	}
	want := func(id ident.InstallationID) bool { return o.InstallationID == "" || id == o.InstallationID }
	// Root's journals (install, uninstall) are root's own files.
	paths, err := findJournals(host, o.InstallationID)
	if err != nil {
		return Document{}, err
	}
	for _, p := range paths {
		// findJournals lists only directories named by a canonical id.
		s := get(ident.InstallationID(filepath.Base(filepath.Dir(p))))
		ws := inspectWorkflow(p)
		s.Workflows = append(s.Workflows, ws)
		// The node id comes from root's own install journal only: the
		// account's journals and identity.json are the account's claims.
		if filepath.Base(p) == "install.journal" {
			if id := ws.Facts["node_id"]; id != "" && ident.CanonicalUUID(id) {
				s.RootRecord = &RootRecord{Source: SourceRoot, NodeID: id, Journal: p}
			}
		}
	}
	books := readBookkeeping(host)
	for _, id := range append(recordIDs(host), books.ids()...) {
		if want(id) {
			get(id)
		}
	}
	records := map[ident.InstallationID]*hostrecord.Record{}
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
	nodes, err := readNodesAs(ctx, o, books, Request{InstallationID: o.InstallationID, Journals: true, Leases: true,
		Status: true, Core: coreRequests(records)})
	var notRead *NotReadError
	if errors.As(err, &notRead) {
		// The account held its child up: every node root is shown as
		// unreadable, with why, and needs attention.
		var ids []ident.InstallationID
		for id, s := range byID {
			if !s.uninstalled() {
				ids = append(ids, id)
			}
		}
		nodes, err = unreadNodes(host, ids, notRead), nil
	}
	if err != nil {
		return Document{}, err
	}
	images := map[ident.InstallationID]string{}
	for _, n := range nodes {
		s := get(n.InstallationID)
		s.Workflows = append(s.Workflows, n.Journals...)
		leases := n.NodeLeases
		s.Node = &leases
		s.Registration = n.Registration
		if s.Registration != nil {
			s.Registration.Source = SourceAccount
		}
		if !s.uninstalled() {
			s.Core = n.Core
		}
		images[n.InstallationID] = n.Image
	}
	homeMissing := accountHomeMissing(host, books)
	var present []ident.InstallationID
	for id, s := range byID {
		s.Bookkeeping = books.forInstallation(host, id)
		s.homeMissing = homeMissing
		if !s.uninstalled() {
			present = append(present, id)
			s.Made = &Made{Home: host.Home(), NodeRoot: host.NodeRoot(id), Journals: host.JournalDir(id), Image: images[id]}
		}
	}
	for id, u := range readUnits(ctx, o.Systemd, present) {
		byID[id].Unit = u
	}
	doc := Document{Format: Format, Installations: []Installation{}, Command: books.command}
	for _, s := range byID {
		if s.RootRecord == nil {
			s.RootRecord = &RootRecord{Source: SourceRoot}
		}
		s.RootRecord.Registered = s.RootRecord.NodeID != "" && !s.uninstalled()
		s.assess(advisor{host: host, installCommand: o.InstallCommand})
		doc.Installations = append(doc.Installations, *s)
	}
	sort.Slice(doc.Installations, func(i, j int) bool {
		return doc.Installations[i].InstallationID < doc.Installations[j].InstallationID
	})
	return doc, nil
}

// Leases reads every generation's lease of every node root on the host (or
// the one named), as the service account: the lease's state, its holders,
// its records and, for every stuck case, what an operator checks or runs
// next.
func Leases(ctx context.Context, o Options) (LeasesDocument, error) {
	nodes, err := ReadNodes(ctx, o, Request{InstallationID: o.InstallationID, Leases: true})
	var notRead *NotReadError
	if errors.As(err, &notRead) {
		// The installations root records, each node root unreadable.
		seen := map[ident.InstallationID]bool{}
		var ids []ident.InstallationID
		for _, id := range append(recordIDs(o.Host), readBookkeeping(o.Host).ids()...) {
			if !seen[id] && (o.InstallationID == "" || id == o.InstallationID) {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		nodes, err = unreadNodes(o.Host, ids, notRead), nil
	}
	if err != nil {
		return LeasesDocument{}, err
	}
	doc := LeasesDocument{Format: Format, Nodes: make([]NodeLeases, 0, len(nodes))}
	for _, n := range nodes {
		doc.Nodes = append(doc.Nodes, n.NodeLeases)
	}
	return doc, nil
}

// unreadNodes is, for each of ids in order, its node root shown as not
// read, for why.
func unreadNodes(host layout.Host, ids []ident.InstallationID, why error) []NodeInspection {
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	nodes := make([]NodeInspection, 0, len(ids))
	for _, id := range ids {
		nodes = append(nodes, NodeInspection{NodeLeases: NodeLeases{InstallationID: id, NodeRoot: host.NodeRoot(id), Error: why.Error()}})
	}
	return normalizeNodes(nodes)
}

// NeedsAttention reports whether a node root could not be read, which
// leases ends with exit 2 for, as status does.
func (d LeasesDocument) NeedsAttention() bool {
	for _, n := range d.Nodes {
		if n.Error != "" {
			return true
		}
	}
	return false
}

// findJournals lists root's journal files of one or every installation:
// /var/lib/oac-node-install/<id>/*.journal, for canonical ids.
func findJournals(host layout.Host, id ident.InstallationID) ([]string, error) {
	ids := "*"
	if id != "" {
		ids = id.String()
	}
	pattern := filepath.Join(host.JournalsRoot(), ids, "*.journal")
	m, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("list journals %s: %w", pattern, err)
	}
	var out []string
	for _, p := range m {
		if _, err := ident.ParseInstallationID(filepath.Base(filepath.Dir(p))); err != nil {
			continue
		}
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out, nil
}

// accountHomeMissing reports whether the service account exists, as the
// one the bookkeeping records, without its home (removed by hand, or never
// made by an install that stopped): nothing of a node can then be read,
// and each installation needs the command that mends it.
func accountHomeMissing(host layout.Host, books bookkeepingSnapshot) bool {
	if books.mismatch != nil {
		return false // the mismatch's own advice comes first
	}
	if _, err := accounts.Under(host.Root).LookupUser(layout.Account); err != nil {
		return false
	}
	_, err := os.Lstat(host.Home())
	return errors.Is(err, fs.ErrNotExist)
}
