package install

import (
	"context"
	"fmt"
	"os"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
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
func NodeConfiguration(ctx context.Context, home, installationID string, uid int, recorded RecordedCore) (*core.Configuration, error) {
	node := layout.Node{Root: layout.NodeRootIn(home, installationID)}
	root, err := safefile.OpenRoot(node.Root)
	if err != nil {
		return nil, fmt.Errorf("node root: %w", err)
	}
	defer root.Close()
	if ok, err := root.Exists(layout.NodeIdentityFile); err == nil && !ok {
		if reg, err := root.Exists(layout.RegisteredFile); err == nil && reg {
			// A registered node without its identity has lost its
			// credential: it can neither reach Core nor be confirmed
			// removed.
			return nil, noderoot.Refusal("Remove the node in Web, run this command with --uninstall --force, then add the node again with a new command",
				fmt.Errorf("registered.json is there but state/node/identity.json, the node's credential, is gone"))
		}
	}
	nid, err := noderoot.ReadNodeIdentity(root, uid, installationID)
	if err != nil {
		return nil, err
	}
	switch {
	case nid.CoreURL != noderoot.TrimOrigin(recorded.Origin):
		return nil, fmt.Errorf("%w: identity.json names Core %s, this host's record %s; the node's credential goes only to the recorded Core",
			noderoot.ErrIdentity, privsep.SanitizeField(nid.CoreURL), noderoot.TrimOrigin(recorded.Origin))
	case nid.AllowInsecureOrigin != recorded.AllowInsecureOrigin:
		return nil, fmt.Errorf("%w: identity.json's insecure-origin policy differs from this host's record", noderoot.ErrIdentity)
	case len(recorded.CA) > 0 && nid.CoreCASHA256 != release.SHA256Hex(recorded.CA), len(recorded.CA) == 0 && nid.CoreCASHA256 != "":
		return nil, fmt.Errorf("%w: identity.json's Core CA differs from this host's record", noderoot.ErrIdentity)
	}
	roots, err := trust.New(recorded.CA)
	if err != nil {
		return nil, fmt.Errorf("Core CA: %w", err)
	}
	client, err := noderoot.NewCoreClient(nid, roots, download.ProxyEnvFromEnviron(os.Environ()))
	if err != nil {
		return nil, err
	}
	conf, err := client.Configuration(ctx, nid.Identity.DeploymentGeneration)
	if err != nil {
		return nil, err
	}
	if conf.InstallationID != installationID || conf.SpecificationDigest != nid.Identity.SpecificationDigest || conf.Provider != nid.Identity.Provider {
		return nil, fmt.Errorf("%w: Core's configuration of generation %d is not the one this node enrolled with", core.ErrAnswer, nid.Identity.DeploymentGeneration)
	}
	return conf, nil
}
