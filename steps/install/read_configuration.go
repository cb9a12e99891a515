package install

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
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
func NodeConfiguration(ctx context.Context, home string, installationID ident.InstallationID, uid int, recorded RecordedCore) (*core.Configuration, error) {
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
	client, err := noderoot.NewCoreClient(nid, roots, proxy.FromEnviron(os.Environ()))
	if err != nil {
		return nil, err
	}
	conf, err := client.Configuration(ctx, nid.Identity.DeploymentGeneration)
	var se *core.StatusError
	if errors.As(err, &se) && se.Code == http.StatusConflict {
		return nil, noderoot.Refusal(retiredGeneration(installationID, nid.Identity.DeploymentGeneration), err)
	}
	if err != nil {
		return nil, err
	}
	if conf.InstallationID != installationID || conf.SpecificationDigest != nid.Identity.SpecificationDigest || conf.Provider != nid.Identity.Provider {
		return nil, fmt.Errorf("%w: Core's configuration of generation %d is not the one this node enrolled with", core.ErrAnswer, nid.Identity.DeploymentGeneration)
	}
	return conf, nil
}

// retiredGeneration is what to do when Core answers a registered node's
// configuration read 409: Core no longer serves the generation the node was
// installed with. That does not pass: a rerun installs exactly that
// generation, so it can never succeed again. A node whose program runs has
// moved on to Core's newer generations and needs no rerun; a node that
// must be installed again is removed and added with a new command.
func retiredGeneration(id ident.InstallationID, g int64) string {
	return fmt.Sprintf("Core no longer serves generation %d, the one this node was installed with, and a rerun installs only that generation: waiting or rerunning does not change it. "+
		"If the node service runs, the node serves Core's newer generations and needs no rerun (see: sudo oac-node-install status). "+
		"To install the node again, remove it on the Nodes page in Web, run sudo oac-node-install --uninstall --installation-id %s, then add the host with a new command", g, id)
}

// readConfigurationStep records the generation and specification digest of
// Core's configuration.
type readConfigurationStep struct{ d Data }

func (s readConfigurationStep) Run(context.Context, workflow.Facts) (workflow.Result, error) {
	c := s.d.Configuration()
	if c == nil {
		return workflow.Result{}, errors.New("no Core configuration was read")
	}
	return workflow.Result{Facts: map[string]string{"specification_digest": c.SpecificationDigest}}, nil
}

func (s readConfigurationStep) Check(ctx context.Context, f workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	res, err := s.Run(ctx, f)
	return done, res, err
}

// ErrConfiguration: Core's configuration could not be read or does not fit
// this command. Nothing was changed when it is returned.
var ErrConfiguration = errors.New("Core's node configuration")

// ErrTokenRejected: Core answered 401 to the enrollment token (expired, or
// already used); the error wraps ErrConfiguration too.
var ErrTokenRejected = core.ErrTokenRejected

// CoreReader reads Core's configuration with the enrollment token, as a new
// node does before anything is changed, through core's token client (no
// redirect followed, the token only in the Authorization header).
type CoreReader struct {
	// Roots are the trusted roots (system roots plus --core-ca; nil: the
	// system roots).
	Roots *trust.Roots
	// Proxy selects a request's proxy (the installer's one proxy parser).
	Proxy func(*http.Request) (*url.URL, error)
	// Sleeps are the waits before the second and third attempt (nil: 1 s,
	// then 2 s).
	Sleeps []time.Duration
}

// Read GETs <core>/api/v1/sandbox-node/configuration with the token and
// checks the answer against the command: the same public URL, the same
// installation, and the --provider assertion. It returns the parsed
// configuration and the exact answer, which the service-account child
// gets.
func (c CoreReader) Read(ctx context.Context, o Options, token string) (*core.Configuration, []byte, error) {
	client := core.NewTokenClient(o.CoreURL, token, c.Roots, c.Proxy, c.Sleeps)
	defer client.CloseIdleConnections()
	body, err := client.ConfigurationAnswer(ctx, 0)
	if err != nil {
		if ctx.Err() != nil && err == ctx.Err() {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("%w: %w", ErrConfiguration, err)
	}
	conf, err := core.ParseConfiguration(body)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrConfiguration, err)
	}
	if err := CheckConfiguration(conf, o); err != nil {
		return nil, nil, err
	}
	return conf, body, nil
}

// CheckConfiguration checks Core's configuration against the command: the
// same public URL, the same installation, and the --provider assertion.
func CheckConfiguration(conf *core.Configuration, o Options) error {
	switch {
	case conf.CoreURL != o.CoreURL:
		return fmt.Errorf("%w: Core's public URL changed to %s, this command was made for %s; generate a new command in Web (the token was not used)", ErrConfiguration, conf.CoreURL, o.CoreURL)
	case conf.InstallationID != o.InstallationID:
		return fmt.Errorf("%w: Core answered for installation %s, this command is for %s", ErrConfiguration, conf.InstallationID, o.InstallationID)
	case o.Provider != "" && conf.Provider != o.Provider:
		return fmt.Errorf("%w: Core's deployment uses the provider %s, this command says %s; generate a new command in Web", ErrConfiguration, conf.Provider, o.Provider)
	}
	return nil
}
