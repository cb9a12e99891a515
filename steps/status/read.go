package status

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Root's side of the child: it starts the child as the service account,
// bounds it by a deadline and decodes its answer strictly.

// DefaultTimeout bounds the service-account child of status and leases.
const DefaultTimeout = 2 * time.Minute

// inspectionFormat is the child's answer as root decodes it: strict (one
// reading only), bounded by what the privsep protocol carries.
var inspectionFormat = strictjson.Format{MaxSize: 8 << 20}

// ReadNodes reads the node roots of o.Host as the service account:
// directly when this process is that account (or no account exists),
// through the child of Role when it is root. The child's answer is decoded
// into the documented types, never passed on as bytes; every list in it is
// non-nil. It returns no node when the host has no service account.
func ReadNodes(ctx context.Context, o Options, req Request) ([]NodeInspection, error) {
	host := o.Host
	u, err := accounts.Under(host.Root).LookupUser(layout.Account)
	switch {
	case errors.Is(err, accounts.ErrNotFound):
		return []NodeInspection{}, nil // no service account: no node on this host
	case err != nil:
		return nil, err
	}
	// Node roots are found in the account's home as this host lays it out.
	req.Home = host.Home()
	var nodes []NodeInspection
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
	timeout := o.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := privsep.Run(cctx, privsep.Options{
		Binary: bin, UID: u.UID, GID: u.GID, Groups: groups, Home: req.Home,
		Role: Role, Request: req, Output: o.Output, Signals: o.Signals,
		Proxy: proxy.FromEnviron(os.Environ()),
	})
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("reading the node roots as %s did not finish within %s (a process of that account may be holding it up; see `ps -u %s`)",
			layout.Account, timeout, layout.Account)
	}
	if err != nil {
		return nil, err
	}
	if err := inspectionFormat.Decode(res.Value, &nodes); err != nil {
		return nil, fmt.Errorf("decode the node inspection of %s: %w", layout.Account, err)
	}
	return normalizeNodes(nodes), nil
}

// readNodesAs reads the node roots as the service account (ReadNodes),
// unless the account is not the recorded one: nothing then runs as it,
// and no node root is read.
func readNodesAs(ctx context.Context, o Options, books bookkeepingSnapshot, req Request) ([]NodeInspection, error) {
	if books.mismatch != nil {
		return []NodeInspection{}, nil
	}
	return ReadNodes(ctx, o, req)
}

// coreRequests is, for every installation with a host record, the Core
// status asks about it as the service account: root's address of Core.
func coreRequests(records map[ident.InstallationID]*hostrecord.Record) map[ident.InstallationID]NodeRequest {
	out := map[ident.InstallationID]NodeRequest{}
	for id, rec := range records {
		if rec == nil {
			continue
		}
		out[id] = NodeRequest{InstallationID: id, CoreURL: rec.CoreURL,
			AllowInsecureOrigin: rec.AllowInsecureOrigin, CoreCASHA256: rec.CoreCASHA256}
	}
	return out
}

// normalizeNodes gives every list in nodes a non-nil value, so that JSON
// output shows an empty list as [] and never as null.
func normalizeNodes(nodes []NodeInspection) []NodeInspection {
	if nodes == nil {
		nodes = []NodeInspection{}
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
