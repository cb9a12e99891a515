package noderoot

import (
	"context"
	"fmt"

	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// ConfigurationReader reads Core's configuration for one generation.
type ConfigurationReader interface {
	Configuration(ctx context.Context, generation int64) (*core.Configuration, error)
}

// NewCoreClient returns a client for the node id that trusts roots (nil:
// the system roots); p is the proxy snapshot,
// read by the parser downloads use (lowercase first even when empty, an
// unusable value refused). It refuses, before any request, a Core origin
// that the identity's recorded insecure-origin policy does not allow:
// the node credential never travels in clear text to a host that is not
// loopback unless the node was installed with --allow-insecure-origin.
func NewCoreClient(id *NodeIdentity, roots *trust.Roots, p proxy.Env) (*core.Client, error) {
	if err := provider.CheckOriginPolicy(id.CoreURL, id.AllowInsecureOrigin); err != nil {
		return nil, fmt.Errorf("%w: core_url: %w", ErrIdentity, err)
	}
	proxyFunc, err := p.ProxyFunc()
	if err != nil {
		return nil, fmt.Errorf("Core client: %w", err)
	}
	return core.NewNodeClient(id.CoreURL, id.Identity.NodeID, id.Credential, roots, proxyFunc), nil
}

// Specification implements Data.
func (e *Env) Specification(ctx context.Context) (*release.Specification, error) {
	if e.spec != nil {
		return e.spec, nil
	}
	want := e.opts.Identity
	base, err := e.Base()
	if err != nil {
		return nil, err
	}
	nid, err := e.NodeIdentity()
	if err != nil {
		return nil, err
	}
	reader := e.opts.Core
	if reader == nil {
		pool, err := e.CertPool()
		if err != nil {
			return nil, err
		}
		if reader, err = NewCoreClient(nid, pool, e.Proxy()); err != nil {
			return nil, err
		}
	}
	conf, err := reader.Configuration(ctx, want.Generation)
	if err != nil {
		return nil, err
	}
	switch {
	case conf.InstallationID != want.InstallationID:
		return nil, fmt.Errorf("%w: Core answered for installation %s", core.ErrAnswer, conf.InstallationID)
	case conf.CoreURL != nid.CoreURL || provider.CoreURL(conf.CoreURL) != base.CoreURL:
		return nil, fmt.Errorf("%w: Core's public URL changed to %s; the node was installed for %s", core.ErrAnswer, conf.CoreURL, nid.CoreURL)
	case conf.Provider != base.Provider:
		return nil, fmt.Errorf("%w: Core answered for provider %s, the node runs %s", core.ErrAnswer, conf.Provider, base.Provider)
	case conf.Generation != want.Generation:
		return nil, fmt.Errorf("%w: Core answered generation %d, not %d", core.ErrAnswer, conf.Generation, want.Generation)
	case conf.SpecificationDigest != want.SpecificationDigest:
		return nil, fmt.Errorf("%w: Core's specification of generation %d has digest %s, the node asked for %s", ErrSpecification, want.Generation, conf.SpecificationDigest, want.SpecificationDigest)
	}
	e.spec = conf.Specification
	return e.spec, nil
}
