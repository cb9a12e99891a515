package generation

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/layout"
	"github.com/openagentcore/oac-node-install/steps/lease"
)

// StepConfiguration is the child request that reads Core's configuration
// with the node's own credential: a rerun of a registered node needs no
// token.
const StepConfiguration = "configuration"

// MarshalJSON writes the configuration in Core's answer form, which
// ParseConfiguration reads back.
func (c *Configuration) MarshalJSON() ([]byte, error) {
	spec, err := c.Specification.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"installation_id": c.InstallationID, "provider": c.Provider, "core_url": c.CoreURL, "generation": c.Generation,
		"specification": json.RawMessage(spec), "specification_digest": c.SpecificationDigest,
		"max_active": c.MaxActive, "max_retained": c.MaxRetained,
	})
}

// NodeConfiguration reads, as the node account, Core's configuration of the
// generation the node enrolled with, using the credential in
// state/node/identity.json and the node's retained Core CA.
func NodeConfiguration(ctx context.Context, home, installationID string, uid int) (*Configuration, error) {
	node := layout.Node{Root: layout.NodeRootIn(home, installationID)}
	root, err := safefile.OpenRoot(node.Root)
	if err != nil {
		return nil, fmt.Errorf("node root: %w", err)
	}
	defer root.Close()
	e := &Env{opts: Options{Home: home, UID: uid, Identity: lease.Identity{InstallationID: installationID}}, node: node, root: root}
	nid, err := e.nodeIdentity()
	if err != nil {
		return nil, err
	}
	pool, err := e.certPool()
	if err != nil {
		return nil, err
	}
	core, err := NewCoreClient(nid, pool, e.proxy())
	if err != nil {
		return nil, err
	}
	conf, err := core.Configuration(ctx, nid.Identity.DeploymentGeneration)
	if err != nil {
		return nil, err
	}
	if conf.InstallationID != installationID || conf.SpecificationDigest != nid.Identity.SpecificationDigest || conf.Provider != nid.Identity.Provider {
		return nil, fmt.Errorf("%w: Core's configuration of generation %d is not the one this node enrolled with", ErrCoreAnswer, nid.Identity.DeploymentGeneration)
	}
	return conf, nil
}
