package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
)

// acquireTimeout bounds the wait for a generation's shared lease lock
// while a collector or repair holds it exclusively.
const acquireTimeout = 30 * time.Second

// Serving references. oac-node takes a shared lock on a generation's lease
// around every native helper that serves it (CONTRACT §3.2), so a collector
// or a repair, which lock it exclusively, sees it in use, and `leases` names
// the node as its holder. The stand-in runs no native helpers; it holds one
// shared reference for each generation it reports ready, from the moment it
// does until Core grants the generation's collection. The reference is
// taken the way oac-node takes it (lease.AcquireForHelper: the lease and
// its identity validated under the lock, the final configuration published,
// no preparing, collecting or dropped record), and never on a generation
// the retained helper is preparing or collecting: the helper locks that
// lease exclusively itself. Lease descriptors are close-on-exec, so the
// helper inherits none of the node's references.

// leaseDir is the node's generation record directory.
func (g *generations) leaseDir() string { return layout.Node{Root: g.root}.Generations() }

// hold takes the serving reference of a ready generation. A generation
// whose lease cannot be taken is still reported ready (the stand-in serves
// nothing from it); the reason goes to the log.
func (g *generations) hold(gen int64, digest string) {
	g.mu.Lock()
	_, held := g.refs[gen]
	g.mu.Unlock()
	if held {
		return
	}
	want := lease.Identity{InstallationID: g.installationID, Generation: gen, SpecificationDigest: digest}
	var final func() error
	if gen == g.base {
		// The base generation's configuration is provider.json.
		final = func() error { _, err := readConfig(g.config); return err }
	}
	ctx, cancel := context.WithTimeout(g.ctx, acquireTimeout)
	defer cancel()
	ref, err := lease.AcquireForHelper(ctx, g.leaseDir(), want, os.Getuid(), final)
	if err != nil {
		fmt.Fprintf(g.log, "oac-node-dev: generation %d: no shared lease reference: %v\n", gen, err)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ctx.Err() != nil || g.dropped[gen] || g.refs[gen] != nil {
		ref.Release()
		return
	}
	g.refs[gen] = ref
}

// unhold releases a generation's serving reference, before its collection.
func (g *generations) unhold(gen int64) {
	g.mu.Lock()
	ref := g.refs[gen]
	delete(g.refs, gen)
	g.mu.Unlock()
	if ref != nil {
		ref.Release()
	}
}

// close releases every serving reference (the node stops).
func (g *generations) close() {
	g.mu.Lock()
	refs := g.refs
	g.refs = map[int64]*lease.HelperRef{}
	g.mu.Unlock()
	for _, ref := range refs {
		ref.Release()
	}
}
