package generation

import (
	"context"
	"fmt"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// StepConfiguration is the child request that reads Core's configuration
// with the node's own credential: a rerun of a registered node needs no
// token.
const StepConfiguration = "configuration"

// RecordedCore is Core as root's records name it for a known node (the
// host record's origin, insecure-origin policy and CA, which root checked
// the command against): where a request carrying the node's credential may
// go, and what it trusts.
type RecordedCore struct {
	Origin              string
	AllowInsecureOrigin bool
	// CA is the operator's CA bundle (nil: the system roots).
	CA []byte
}

// NodeConfiguration reads, as the node account, Core's configuration of the
// generation the node enrolled with, using the credential in
// state/node/identity.json — sent only to the Core root recorded, trusting
// only root's CA: an identity.json (the account's file) that names another
// Core origin, insecure-origin policy or CA is refused before any request.
func NodeConfiguration(ctx context.Context, home, installationID string, uid int, core RecordedCore) (*Configuration, error) {
	node := layout.Node{Root: layout.NodeRootIn(home, installationID)}
	root, err := safefile.OpenRoot(node.Root)
	if err != nil {
		return nil, fmt.Errorf("node root: %w", err)
	}
	defer root.Close()
	e := &Env{opts: Options{Home: home, UID: uid, Identity: lease.Identity{InstallationID: installationID}}, node: node, root: root}
	if ok, err := root.Exists(layout.NodeIdentityFile); err == nil && !ok {
		if reg, err := root.Exists(layout.RegisteredFile); err == nil && reg {
			// A registered node without its identity has lost its
			// credential: it can neither reach Core nor be confirmed
			// removed.
			return nil, refusal("Remove the node in Web, run this command with --uninstall --force, then add the node again with a new command",
				fmt.Errorf("registered.json is there but state/node/identity.json, the node's credential, is gone"))
		}
	}
	nid, err := e.nodeIdentity()
	if err != nil {
		return nil, err
	}
	switch {
	case nid.CoreURL != trimOrigin(core.Origin):
		return nil, fmt.Errorf("%w: identity.json names Core %s, this host's record %s; the node's credential goes only to the recorded Core",
			ErrIdentity, privsep.SanitizeField(nid.CoreURL), trimOrigin(core.Origin))
	case nid.AllowInsecureOrigin != core.AllowInsecureOrigin:
		return nil, fmt.Errorf("%w: identity.json's insecure-origin policy differs from this host's record", ErrIdentity)
	case len(core.CA) > 0 && nid.CoreCASHA256 != release.SHA256Hex(core.CA), len(core.CA) == 0 && nid.CoreCASHA256 != "":
		return nil, fmt.Errorf("%w: identity.json's Core CA differs from this host's record", ErrIdentity)
	}
	roots, err := trust.New(core.CA)
	if err != nil {
		return nil, fmt.Errorf("Core CA: %w", err)
	}
	client, err := NewCoreClient(nid, roots, e.proxy())
	if err != nil {
		return nil, err
	}
	conf, err := client.Configuration(ctx, nid.Identity.DeploymentGeneration)
	if err != nil {
		return nil, err
	}
	if conf.InstallationID != installationID || conf.SpecificationDigest != nid.Identity.SpecificationDigest || conf.Provider != nid.Identity.Provider {
		return nil, fmt.Errorf("%w: Core's configuration of generation %d is not the one this node enrolled with", ErrCoreAnswer, nid.Identity.DeploymentGeneration)
	}
	return conf, nil
}
