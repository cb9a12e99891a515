package status

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/workflow"
)

// The service account's side: what the child of Role reads in the node
// roots, as the account, and answers root.

// Role is the service-account child that reads the node roots for status
// and leases: root never opens files the service account can write.
const Role = "inspect"

// Request asks the child what to read.
type Request struct {
	Home           string               `json:"home"`
	InstallationID ident.InstallationID `json:"installation_id"`
	Leases         bool                 `json:"leases"`
	Journals       bool                 `json:"journals"`
	// Status asks for each node's registration and, for the nodes Core
	// names (root's records of Core, by installation), Core's view.
	Status bool                                 `json:"status"`
	Core   map[ident.InstallationID]NodeRequest `json:"core"`
}

// NodeInspection is the child's answer for one node root: its leases, the
// reports of its journals (prepare, repair, collect), which status lists
// among the installation's workflows, and for status the node's
// registration and Core's view of it.
type NodeInspection struct {
	NodeLeases
	Journals     []WorkflowStatus `json:"journals"`
	Registration *Registration    `json:"registration,omitempty"`
	Core         *CoreView        `json:"core,omitempty"`
	// Image is the Runtime image the node's provider.json names (a local
	// image ID, or microsandbox's reference), as the account wrote it.
	Image string `json:"image,omitempty"`
}

// Serve is the Role handler, run in the child as the service account: it
// reads the node roots the request names and answers with them.
func Serve(ctx context.Context, c *privsep.Child) (any, error) {
	var req Request
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
func inspectNodes(ctx context.Context, req Request) ([]NodeInspection, error) {
	nodes := filepath.Join(req.Home, layout.NodesRel)
	dir, err := openNodes(req.Home, os.Getuid())
	switch {
	case errors.Is(err, os.ErrNotExist):
		return []NodeInspection{}, nil // no node was ever installed here
	case err != nil && req.InstallationID == "":
		return nil, fmt.Errorf("read %s: %w", nodes, err)
	}
	if dir != nil {
		defer dir.Close()
	}
	var ids []ident.InstallationID
	if req.InstallationID != "" {
		ids = []ident.InstallationID{req.InstallationID}
	} else {
		names, err := dir.ReadDir()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", nodes, err)
		}
		for _, name := range names {
			if id, err := ident.ParseInstallationID(name); err == nil {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	out := make([]NodeInspection, 0, len(ids))
	for _, id := range ids {
		n := layout.Node{Root: layout.NodeRootIn(req.Home, id)}
		ni := NodeInspection{NodeLeases: NodeLeases{InstallationID: id, NodeRoot: n.Root}}
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
				sr = NodeRequest{InstallationID: id}
			}
			sr.InstallationID = id
			reg, core := nodeStatus(ctx, req.Home, os.Getuid(), proxy.FromEnviron(os.Environ()), sr)
			ni.Registration, ni.Core = &reg, core
			ni.Image = runtimeImage(req.Home, id)
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
	for _, rel := range []string{".", layout.OacDir} {
		d, err := h.OpenDir(rel, nodeDir(uid))
		if err != nil {
			return nil, err
		}
		d.Close()
	}
	return h.OpenDir(layout.NodesRel, nodeDir(uid))
}

// checkNodeRoot checks that id in the nodes directory is a directory as
// nodeDir says, not a link.
func checkNodeRoot(nodes *safefile.Root, id ident.InstallationID) error {
	d, err := nodes.OpenDir(id.String(), nodeDir(os.Getuid()))
	if err != nil {
		return err
	}
	return d.Close()
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

// inspectWorkflow reads the journal at path and whether a live process
// holds its lock, taking no lock and changing nothing. Root reads its own
// journals with it, the child the node's.
func inspectWorkflow(path string) WorkflowStatus {
	rep, err := workflow.InspectJournal(path, workflow.Lookup)
	if err != nil {
		rep = &workflow.Report{Journal: path, Condition: workflow.NeedsInspection, Note: "cannot read: " + err.Error()}
	}
	normalizeReport(rep)
	if net := rep.NetworkLeft(); net != "" {
		// What is left is the engine's: status cannot tell whether it is
		// removed since, so it is shown, not a reason for attention.
		rep.Note = joinNote(rep.Note, "left the Docker network "+net+" (the Docker Engine did not run); once the engine runs, remove it: sudo docker network rm "+net)
	}
	if rep.AccountKept() != "" || rep.NetworkLeft() != "" {
		rep.Condition = workflow.Incomplete // as the uninstall command reported it
	}
	ws := WorkflowStatus{Report: *rep}
	holders, err := lease.LockHolders(path + ".lock")
	if err != nil {
		ws.Note = joinNote(ws.Note, "cannot tell whether it is running: "+err.Error())
	}
	for _, h := range holders {
		if !h.Waiting {
			ws.Running = &ProcessInfo{PID: h.PID, Command: h.Command, UID: h.UID}
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

// runtimeImage is the image the node's provider.json names, "" when it
// has none or cannot be read (the registration and the leases say why).
func runtimeImage(home string, id ident.InstallationID) string {
	root, err := noderoot.OpenNodeRoot(home, id)
	if err != nil {
		return ""
	}
	defer root.Close()
	data, err := root.ReadFile(layout.ProviderConfigFile, safefile.Expect{UID: os.Getuid(), MaxSize: provider.MaxSize})
	if err != nil {
		return ""
	}
	conf, err := provider.Parse(data)
	switch {
	case err != nil:
		return ""
	case conf.Docker != nil:
		return conf.Docker.Image
	case conf.Microsandbox != nil:
		return conf.Microsandbox.Image
	}
	return ""
}
