package uninstall

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// askCoreStep is the Core check (CONTRACT §2.4), in the service-account
// child. Run makes it once before the journal exists, so a refusal
// changes nothing; the step then records that answer. A resumed run whose
// journal lacks the answer asks again.
type askCoreStep struct{ e *Env }

func (s askCoreStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	if p := s.e.precheck; p != nil {
		return *p, nil
	}
	return s.e.serviceStep(workflow.UninstallAskCore).Run(ctx, facts)
}

// Facts of the uninstall workflow's Core check.
const (
	// FactCore is how the Core check ended: CoreConfirmed (Core rejected
	// the credential), CoreNeverRegistered or CoreForced (skipped).
	FactCore            = "core"
	CoreConfirmed       = "confirmed"
	CoreNeverRegistered = "never_registered"
	CoreForced          = "forced"
)

// UninstallCoreTimeout bounds the uninstall's request to Core (CONTRACT
// §2.4).
var UninstallCoreTimeout = 15 * time.Second

// ErrCoreListsNode: Core still accepts the node's credential.
var ErrCoreListsNode = errors.New("Core still lists this node")

// askCore asks Core, at the address of root's records and with the node
// credential, whether it still lists the node: HTTP 401 confirms the
// removal; a 2xx refuses; any other answer or none refuses and names
// --force for a Core that no longer exists. --force, and a node that never
// registered, skip the question.
func askCore(ctx context.Context, in NodeOptions, req Input) (workflow.Result, error) {
	if req.Force {
		in.logf("skip the Core check (--force)")
		return coreResult(CoreForced), nil
	}
	// Without the node's credential Core cannot be asked: a node root's
	// records say it registered, so Core must confirm, or --force.
	noCredential := func() (workflow.Result, error) {
		return workflow.Result{}, noderoot.Refusal("Remove the node on the Nodes page of Web, then rerun this command with --force",
			fmt.Errorf("%w: root's records say this node registered with Core, but its credential (state/node/identity.json) is gone", ErrCoreUnconfirmed))
	}
	root, err := in.openNodeRoot(req.InstallationID)
	if errors.Is(err, os.ErrNotExist) {
		if req.Registered {
			return noCredential()
		}
		return coreResult(CoreNeverRegistered), nil
	}
	if err != nil {
		return workflow.Result{}, err
	}
	defer root.Close()
	registered := req.Registered
	for _, rel := range []string{layout.RegisteredFile, layout.NodeIdentityFile} {
		if _, err := root.Lstat(rel); err == nil {
			registered = true
		} else if !errors.Is(err, os.ErrNotExist) {
			return workflow.Result{}, fmt.Errorf("read %s: %w", root.Join(rel), err)
		}
	}
	if !registered {
		in.logf("the node never registered with Core; skip the Core check")
		return coreResult(CoreNeverRegistered), nil
	}
	data, err := root.ReadFile(layout.NodeIdentityFile, safefile.Expect{UID: in.UID, MaxSize: noderoot.MaxIdentitySize})
	if errors.Is(err, os.ErrNotExist) {
		return noCredential()
	}
	if err != nil {
		return workflow.Result{}, fmt.Errorf("%w: %w", noderoot.ErrIdentity, err)
	}
	nid, err := noderoot.ParseNodeIdentity(data)
	if err != nil {
		return workflow.Result{}, err
	}
	if nid.Identity.InstallationID != req.InstallationID {
		return workflow.Result{}, fmt.Errorf("%w: it names installation %s", noderoot.ErrIdentity, nid.Identity.InstallationID)
	}
	// Core's address and policy are root's, not the identity's.
	nid.CoreURL, nid.AllowInsecureOrigin = noderoot.TrimOrigin(req.CoreURL), req.AllowInsecureOrigin
	pool, err := noderoot.CoreRoots(root, in.UID, req.CoreCASHA256)
	if err != nil {
		return workflow.Result{}, err
	}
	c, err := noderoot.NewCoreClient(nid, pool, in.Proxy)
	if err != nil {
		return workflow.Result{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, UninstallCoreTimeout)
	defer cancel()
	_, status, err := install.CoreIdentity(rctx, c)
	switch {
	case ctx.Err() != nil:
		return workflow.Result{}, ctx.Err()
	case err != nil:
		return workflow.Result{}, noderoot.Refusal("If that Core no longer exists, rerun with --force", fmt.Errorf("%w at %s (Core unreachable: %v)", ErrCoreUnconfirmed, nid.CoreURL, err))
	case status == http.StatusUnauthorized:
		in.logf("Core confirmed that the node was removed")
		return coreResult(CoreConfirmed), nil
	case status >= 200 && status < 300:
		return workflow.Result{}, noderoot.Refusal("Remove it on the Nodes page first, then rerun this command", fmt.Errorf("%w (node %s)", ErrCoreListsNode, nid.Identity.NodeID))
	}
	return workflow.Result{}, noderoot.Refusal("If that Core no longer exists, rerun with --force", fmt.Errorf("%w at %s (HTTP %d)", ErrCoreUnconfirmed, nid.CoreURL, status))
}

func coreResult(how string) workflow.Result {
	ev := workflow.EventCoreCheckSkipped
	if how == CoreConfirmed {
		ev = workflow.EventCoreConfirmed
	}
	return workflow.Result{Event: ev, Facts: map[string]string{FactCore: how}}
}

// ErrCoreUnconfirmed: Core gave no answer that confirms the removal.
var ErrCoreUnconfirmed = errors.New("cannot confirm with Core that the node was removed")
