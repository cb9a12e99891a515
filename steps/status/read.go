package status

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
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

// DefaultTimeout bounds the service-account child of status and leases:
// long enough for its one request to Core (coreTimeout) and the node
// roots' records, short enough that, with the child's grace period, status
// answers within 10 s whatever the account does to the child.
const DefaultTimeout = 8 * time.Second

// abandonDelay is how long ReadNodes waits, after the deadline or an
// interrupt, for a killed child to be gone: one the kernel cannot kill at
// once (a read on a dead network mount sleeps uninterruptibly) is left to
// the kernel, killed and without a parent to answer, and the node roots
// are shown as unreadable.
const abandonDelay = 1500 * time.Millisecond

// maxChildOutput bounds what the child may print on the operator's
// terminal: the rest of a flood is dropped, with one note.
const maxChildOutput = 64 << 10

// NotReadError is ReadNodes's failure when the child did not answer within
// its deadline: status and leases show every node root as unreadable, for
// that reason, instead of failing.
type NotReadError struct {
	Timeout time.Duration
}

func (e *NotReadError) Error() string {
	return fmt.Sprintf("reading the node roots as %s did not finish within %s (a process of that account may be holding it up; see `ps -u %s`); the node root is not read",
		layout.Account, e.Timeout, layout.Account)
}

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
	var output io.Writer
	if o.Output != nil {
		output = &cappedWriter{w: o.Output, left: maxChildOutput}
	}
	res, err := runBounded(cctx, privsep.Options{
		Binary: bin, UID: u.UID, GID: u.GID, Groups: groups, Home: req.Home,
		Role: Role, Request: req, Output: output, Signals: o.Signals,
		Proxy: proxy.FromEnviron(os.Environ()),
	})
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return nil, &NotReadError{Timeout: timeout}
	}
	if err != nil {
		return nil, err
	}
	if err := inspectionFormat.Decode(res.Value, &nodes); err != nil {
		return nil, fmt.Errorf("decode the node inspection of %s: %w", layout.Account, err)
	}
	return normalizeNodes(nodes), nil
}

// runChild is privsep.Run; a test replaces it with a child that never
// goes.
var runChild = privsep.Run

// runBounded is privsep.Run, which returns only once the child is gone,
// given up abandonDelay after ctx ended: a child stuck in the kernel
// (uninterruptible sleep) has been sent SIGKILL by then and ends when the
// kernel lets it, with nothing left to answer; status must answer now.
func runBounded(ctx context.Context, o privsep.Options) (privsep.Result, error) {
	type outcome struct {
		res privsep.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := runChild(ctx, o)
		done <- outcome{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err
	case <-ctx.Done():
	}
	t := time.NewTimer(abandonDelay)
	defer t.Stop()
	select {
	case r := <-done:
		return r.res, r.err
	case <-t.C:
		return privsep.Result{}, fmt.Errorf("%s as %s: %w", Role, layout.Account, privsep.ErrInterrupted)
	}
}

// cappedWriter passes on the first left bytes written, then one note, and
// drops the rest, never failing: a child that floods its output cannot
// fill the operator's terminal or slow the inspection.
type cappedWriter struct {
	mu   sync.Mutex
	w    io.Writer
	left int
	cut  bool
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return len(p), nil
	}
	if len(p) <= c.left {
		c.left -= len(p)
		c.w.Write(p)
		return len(p), nil
	}
	c.w.Write(p[:c.left])
	c.left, c.cut = 0, true
	fmt.Fprintf(c.w, "\n(the rest of what the %s process printed is left out)\n", layout.Account)
	return len(p), nil
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
