package install

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
)

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
