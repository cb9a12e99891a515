package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/steps/generation"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/workflow"
)

// roleInspect is the service-account child that reads the node roots for
// status and leases: root never opens files the service account can write.
const roleInspect = "inspect"

// inspectRequest asks the child what to read.
type inspectRequest struct {
	Home           string `json:"home"`
	InstallationID string `json:"installation_id"`
	Leases         bool   `json:"leases"`
	Journals       bool   `json:"journals"`
	// Status asks for each node's registration and, for the nodes Core
	// names (root's records of Core, by installation), Core's view.
	Status bool                                    `json:"status"`
	Core   map[string]generation.NodeStatusRequest `json:"core"`
}

// nodeLeases is one node root's generation leases: an element of
// `leases --json`'s "nodes", and a status installation's "node".
type nodeLeases struct {
	InstallationID string                   `json:"installation_id"`
	NodeRoot       string                   `json:"node_root"`
	Generations    []lease.GenerationReport `json:"generations"`
	Error          string                   `json:"error,omitempty"`
}

// nodeInspection is the inspect child's answer for one node root: its
// leases, the reports of its journals (prepare, repair, collect), which
// status lists among the installation's workflows, and for status the
// node's registration and Core's view of it.
type nodeInspection struct {
	nodeLeases
	Journals     []workflowStatus         `json:"journals"`
	Registration *generation.Registration `json:"registration,omitempty"`
	Core         *generation.CoreView     `json:"core,omitempty"`
}

// workflowStatus is one workflow journal's report and, while a live
// process holds the journal's lock, that process: the workflow is running.
type workflowStatus struct {
	workflow.Report
	Running *processInfo `json:"running,omitempty"`
}

// processInfo is a process holding a journal's lock. Command is argv[0],
// which the process sets freely: it is printed only through field.
type processInfo struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	UID     int    `json:"uid"`
}

// inspectWorkflow reads the journal at path and whether a live process
// holds its lock, taking no lock and changing nothing.
func inspectWorkflow(path string) workflowStatus {
	rep, err := workflow.InspectJournal(path, workflow.Lookup)
	if err != nil {
		rep = &workflow.Report{Journal: path, Condition: workflow.NeedsInspection, Note: "cannot read: " + err.Error()}
	}
	normalizeReport(rep)
	ws := workflowStatus{Report: *rep}
	holders, err := lease.LockHolders(path + ".lock")
	if err != nil {
		ws.Note = joinNote(ws.Note, "cannot tell whether it is running: "+err.Error())
	}
	for _, h := range holders {
		if !h.Waiting {
			ws.Running = &processInfo{PID: h.PID, Command: h.Command, UID: h.UID}
			break
		}
	}
	return ws
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// inspectionFormat is the child's answer as root decodes it: strict (one
// reading only), bounded by what the privsep protocol carries.
var inspectionFormat = strictjson.Format{MaxSize: 8 << 20}

func serveInspect(ctx context.Context, c *privsep.Child) (any, error) {
	lessGC()
	var req inspectRequest
	if err := c.Decode(&req); err != nil {
		return nil, err
	}
	nodes, err := inspectNodes(ctx, req)
	if err != nil {
		return nil, err
	}
	// Lists go out as [], never null, which the strict decoder refuses.
	return normalizeNodes(nodes), nil
}

// inspectNodes reads every node root under req.Home (or the one named),
// as whoever runs it.
func inspectNodes(ctx context.Context, req inspectRequest) ([]nodeInspection, error) {
	nodes := filepath.Join(req.Home, ".oac", "nodes")
	dir, err := openNodes(req.Home, os.Getuid())
	switch {
	case errors.Is(err, os.ErrNotExist):
		return []nodeInspection{}, nil // no node was ever installed here
	case err != nil && req.InstallationID == "":
		return nil, fmt.Errorf("read %s: %w", nodes, err)
	}
	if dir != nil {
		defer dir.Close()
	}
	var ids []string
	if req.InstallationID != "" {
		ids = []string{req.InstallationID}
	} else {
		names, err := dir.ReadDir()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", nodes, err)
		}
		for _, name := range names {
			if validateInstallationID(name) == nil {
				ids = append(ids, name)
			}
		}
	}
	sort.Strings(ids)
	out := make([]nodeInspection, 0, len(ids))
	for _, id := range ids {
		n := layout.Node{Root: layout.NodeRootIn(req.Home, id)}
		ni := nodeInspection{nodeLeases: nodeLeases{InstallationID: id, NodeRoot: n.Root}}
		cerr := err // the nodes directory's refusal, for the one node named
		if cerr == nil {
			cerr = checkNodeRoot(dir, id)
		}
		if errors.Is(cerr, os.ErrNotExist) {
			continue // a node named that was never installed here, or is removed
		}
		if cerr != nil {
			ni.Error = cerr.Error() + "; the node root is not read"
			out = append(out, ni)
			continue
		}
		if req.Leases {
			gens, err := lease.InspectNode(n.Generations(), os.Getuid(), id, baseGeneration(n))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				ni.Error = err.Error()
			}
			ni.Generations = gens
		}
		if req.Journals {
			paths, _ := filepath.Glob(filepath.Join(n.Journals(), "*.journal"))
			sort.Strings(paths)
			for _, p := range paths {
				ni.Journals = append(ni.Journals, inspectWorkflow(p))
			}
		}
		if req.Status {
			sr, ok := req.Core[id]
			if !ok {
				sr = generation.NodeStatusRequest{InstallationID: id}
			}
			sr.InstallationID = id
			reg, core := generation.NodeStatus(ctx, req.Home, os.Getuid(), download.ProxyEnvFromEnviron(os.Environ()), sr)
			ni.Registration, ni.Core = &reg, core
		}
		out = append(out, ni)
	}
	return out, nil
}

// nodeDir is what every directory from the home to a node root must be:
// the account's (the child's own uid), writable by no one else.
func nodeDir(uid int) safefile.Expect { return safefile.Expect{UID: uid, DenyMode: 0o022} }

// openNodes opens home/.oac/nodes without following a symbolic link
// anywhere below home, checking each directory on the way as nodeDir.
func openNodes(home string, uid int) (*safefile.Root, error) {
	h, err := safefile.OpenRoot(home)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	for _, rel := range []string{".", ".oac"} {
		d, err := h.OpenDir(rel, nodeDir(uid))
		if err != nil {
			return nil, err
		}
		d.Close()
	}
	return h.OpenDir(filepath.Join(".oac", "nodes"), nodeDir(uid))
}

// checkNodeRoot checks that id in the nodes directory is a directory as
// nodeDir says, not a link.
func checkNodeRoot(nodes *safefile.Root, id string) error {
	d, err := nodes.OpenDir(id, nodeDir(os.Getuid()))
	if err != nil {
		return err
	}
	return d.Close()
}

// inspectTimeout bounds the service-account child of status and leases.
var inspectTimeout = 2 * time.Minute

// readNodes runs inspectNodes as the service account: directly when this
// process is that account (or no account exists), through the privsep child
// when it is root. The child's answer is decoded into the documented types,
// never passed on as bytes; every list in it is non-nil. It returns no node
// when the host has no service account.
func readNodes(ctx context.Context, host layout.Host, req inspectRequest, stderr io.Writer) ([]nodeInspection, error) {
	u, err := accounts.Under(host.Root).LookupUser(layout.Account)
	switch {
	case errors.Is(err, accounts.ErrNotFound):
		return []nodeInspection{}, nil // no service account: no node on this host
	case err != nil:
		return nil, err
	}
	// Node roots are found in the account's home as this host lays it out.
	req.Home = host.Home()
	var nodes []nodeInspection
	if os.Geteuid() != 0 {
		if nodes, err = inspectNodes(ctx, req); err != nil {
			return nil, err
		}
		return normalizeNodes(nodes), nil
	}
	if u.UID == 0 {
		return nil, fmt.Errorf("the %s account has uid 0; refusing to read its files as root", layout.Account)
	}
	bin, err := privsep.Capture()
	if err != nil {
		return nil, err
	}
	defer bin.Close()
	groups, err := accounts.Under(host.Root).SupplementaryGroups(layout.Account)
	if err != nil {
		return nil, err
	}
	// The account can stop or slow its own process (SIGSTOP, a FIFO it
	// put somewhere): the inspection has a deadline, so status always
	// ends.
	cctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	res, err := privsep.Run(cctx, privsep.Options{
		Binary: bin, UID: u.UID, GID: u.GID, Groups: groups, Home: req.Home,
		Role: roleInspect, Request: req, Output: stderr, Signals: childSignals,
		Proxy: privsep.ProxyFromEnviron(os.Environ()),
	})
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("reading the node roots as %s did not finish within %s (a process of that account may be holding it up; see `ps -u %s`)",
			layout.Account, inspectTimeout, layout.Account)
	}
	if err != nil {
		return nil, err
	}
	if err := inspectionFormat.Decode(res.Value, &nodes); err != nil {
		return nil, fmt.Errorf("decode the node inspection of %s: %w", layout.Account, err)
	}
	return normalizeNodes(nodes), nil
}

// normalizeNodes gives every list in nodes a non-nil value, so that JSON
// output shows an empty list as [] and never as null.
func normalizeNodes(nodes []nodeInspection) []nodeInspection {
	if nodes == nil {
		nodes = []nodeInspection{}
	}
	for i := range nodes {
		n := &nodes[i]
		n.Generations = nonNil(n.Generations)
		for j := range n.Generations {
			n.Generations[j].Holders = nonNil(n.Generations[j].Holders)
		}
		n.Journals = nonNil(n.Journals)
		for j := range n.Journals {
			normalizeReport(&n.Journals[j].Report)
		}
	}
	return nodes
}

// normalizeReport gives a journal report's lists and map non-nil values.
func normalizeReport(r *workflow.Report) {
	r.Completed = nonNil(r.Completed)
	if r.Attempts == nil {
		r.Attempts = map[string]int{}
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// baseGeneration is the generation the node's provider.json configures, or
// 0 when it cannot be read (a node not installed that far).
func baseGeneration(n layout.Node) int64 {
	root, err := safefile.OpenRoot(n.Root)
	if err != nil {
		return 0
	}
	defer root.Close()
	data, err := root.ReadFile("provider.json", safefile.Expect{UID: os.Getuid(), Mode: 0o600, MaxSize: provider.MaxSize})
	if err != nil {
		return 0
	}
	c, err := provider.Parse(data)
	if err != nil {
		return 0
	}
	return c.Generation
}
