package generation

import (
	"context"
	"fmt"

	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
)

// MaxConfigurationSize bounds Core's configuration answer.
const MaxConfigurationSize = core.MaxConfigurationSize

// ErrCoreRejected: Core answered the configuration read with an HTTP
// status other than 200 (*CoreStatusError).
var ErrCoreRejected = core.ErrRejected

// ErrCoreAnswer: Core's configuration answer is not a valid configuration
// for this node and generation.
var ErrCoreAnswer = core.ErrAnswer

// ConfigurationReader reads Core's configuration for one generation.
type ConfigurationReader interface {
	Configuration(ctx context.Context, generation int64) (*Configuration, error)
}

// Configuration is Core's configuration answer (core.Configuration).
type Configuration = core.Configuration

// CoreStatusError is a refused configuration read (core.StatusError).
type CoreStatusError = core.StatusError

// CoreClient is the Core client (core.Client).
type CoreClient = core.Client

// ParseConfiguration validates Core's configuration answer in itself.
func ParseConfiguration(body []byte) (*Configuration, error) { return core.ParseConfiguration(body) }

// NewCoreClient returns a client for the node id that trusts roots (nil:
// the system roots); proxy is the proxy snapshot,
// read by the parser downloads use (lowercase first even when empty, an
// unusable value refused). It refuses, before any request, a Core origin
// that the identity's recorded insecure-origin policy does not allow:
// the node credential never travels in clear text to a host that is not
// loopback unless the node was installed with --allow-insecure-origin.
func NewCoreClient(id *NodeIdentity, roots *trust.Roots, proxy download.ProxyEnv) (*CoreClient, error) {
	if err := provider.CheckOriginPolicy(id.CoreURL, id.AllowInsecureOrigin); err != nil {
		return nil, fmt.Errorf("%w: core_url: %w", ErrIdentity, err)
	}
	proxyFunc, err := proxy.ProxyFunc()
	if err != nil {
		return nil, fmt.Errorf("Core client: %w", err)
	}
	return core.NewNodeClient(id.CoreURL, id.Identity.NodeID, id.Credential, roots, proxyFunc), nil
}
