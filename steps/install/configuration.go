package install

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/openagentcore/oac-node-install/steps/generation"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
)

// ErrConfiguration: Core's configuration could not be read or does not fit
// this command. Nothing was changed when it is returned.
var ErrConfiguration = errors.New("Core's node configuration")

// ErrTokenRejected: Core answered 401 to the enrollment token (expired, or
// already used); it wraps ErrConfiguration.
var ErrTokenRejected = fmt.Errorf("%w: Core rejected the node configuration read (HTTP 401): the command expired or was already used; generate a new command in Web", ErrConfiguration)

// CoreReader reads Core's configuration with the enrollment token, as a new
// node does before anything is changed. It never follows a redirect and
// puts the token only in the Authorization header.
type CoreReader struct {
	// Roots are the trusted roots (system roots plus --core-ca; nil: the
	// system roots).
	Roots *trust.Roots
	// Proxy selects a request's proxy (the installer's one proxy parser).
	Proxy func(*http.Request) (*url.URL, error)
	// Sleeps are the waits before the second and third attempt.
	Sleeps []time.Duration
}

// Read GETs <core>/api/v1/sandbox-node/configuration with the token and
// checks the answer against the command: the same public URL, the same
// installation, and the --provider assertion. It returns the parsed
// configuration and the exact answer, which the service-account child
// gets.
func (c CoreReader) Read(ctx context.Context, o Options, token string) (*generation.Configuration, []byte, error) {
	tr := &http.Transport{
		Proxy:               c.Proxy,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 15 * time.Second,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	rt := c.Roots.Transport(tr)
	defer rt.CloseIdleConnections()
	client := &http.Client{Transport: rt, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	sleeps := c.Sleeps
	if sleeps == nil {
		sleeps = []time.Duration{time.Second, 2 * time.Second}
	}
	var body []byte
	var err error
	for attempt := 0; ; attempt++ {
		var retry bool
		body, retry, err = c.once(ctx, client, o.CoreURL, token)
		if err == nil || !retry || attempt >= len(sleeps) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(sleeps[attempt]):
		}
	}
	if err != nil {
		return nil, nil, err
	}
	conf, err := generation.ParseConfiguration(body)
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
func CheckConfiguration(conf *generation.Configuration, o Options) error {
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

func (c CoreReader) once(ctx context.Context, client *http.Client, core, token string) (body []byte, retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, core+"/api/v1/sandbox-node/configuration", nil)
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, true, fmt.Errorf("%w: Core at %s cannot be reached (%s); check the address and that the reverse proxy routes /api/v1 to Core", ErrConfiguration, core, reason(err))
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return nil, false, ErrTokenRejected
	case http.StatusNotFound:
		return nil, false, fmt.Errorf("%w: Core rejected the node configuration read (HTTP 404): the route /api/v1 must reach Core, not Web; check the reverse proxy", ErrConfiguration)
	case http.StatusConflict:
		return nil, false, fmt.Errorf("%w: Core rejected the node configuration read (HTTP 409): the deployment is resetting or its specification conflicts; try again later", ErrConfiguration)
	case 408, 429, 500, 502, 503, 504:
		return nil, true, fmt.Errorf("%w: Core rejected the node configuration read (HTTP %d)", ErrConfiguration, resp.StatusCode)
	default:
		return nil, false, fmt.Errorf("%w: Core rejected the node configuration read (HTTP %d)", ErrConfiguration, resp.StatusCode)
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, generation.MaxConfigurationSize+1))
	if err != nil {
		return nil, true, fmt.Errorf("%w: reading Core's answer: %s", ErrConfiguration, reason(err))
	}
	if len(body) > generation.MaxConfigurationSize {
		return nil, false, fmt.Errorf("%w: Core's answer is larger than %d bytes", ErrConfiguration, generation.MaxConfigurationSize)
	}
	return body, false, nil
}

// reason names a transport failure without the request (whose URL is
// harmless, but whose wrapping repeats itself).
func reason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if clock := trust.Explain(err, time.Now()); clock != nil {
		return clock.Error()
	}
	var ce *tls.CertificateVerificationError
	if errors.As(err, &ce) {
		return "its TLS certificate is not trusted; give its CA with --core-ca"
	}
	return err.Error()
}
