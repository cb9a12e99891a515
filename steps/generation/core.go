package generation

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// MaxConfigurationSize bounds Core's configuration answer.
const MaxConfigurationSize = 16384

// ErrCoreRejected: Core answered the configuration read with an HTTP
// status other than 200 (*CoreStatusError).
var ErrCoreRejected = errors.New("Core rejected the node configuration read")

// ErrCoreAnswer: Core's configuration answer is not a valid configuration
// for this node and generation.
var ErrCoreAnswer = errors.New("invalid configuration from Core")

// ConfigurationReader reads Core's configuration for one generation.
type ConfigurationReader interface {
	Configuration(ctx context.Context, generation int64) (*Configuration, error)
}

// Configuration is Core's configuration answer (CONTRACT §2.2), validated
// in itself: the specification parses canonically for the provider and the
// digest Core sent is the digest of that specification.
type Configuration struct {
	InstallationID      string
	Provider            string
	CoreURL             string // origin
	Generation          int64
	Specification       *release.Specification
	SpecificationDigest string
	MaxActive           int64
	MaxRetained         int64
}

// CoreStatusError is a refused configuration read. The response body is
// never kept.
type CoreStatusError struct{ Code int }

func (e *CoreStatusError) Error() string {
	hint := ""
	switch e.Code {
	case http.StatusUnauthorized:
		hint = ": Core no longer accepts this node's credential; remove the node and install it again, or uninstall it with --uninstall"
	case http.StatusNotFound:
		hint = ": the route /api/v1 must reach Core, not Web; check the reverse proxy"
	case http.StatusConflict:
		hint = ": the deployment is resetting or its specification conflicts; the node retries later"
	}
	return fmt.Sprintf("%v (HTTP %d)%s", ErrCoreRejected, e.Code, hint)
}

// Unwrap lets callers test with errors.Is(err, ErrCoreRejected).
func (e *CoreStatusError) Unwrap() error { return ErrCoreRejected }

// CoreClient reads the configuration with the node credential. It never
// follows a redirect and never puts the credential anywhere but the
// Authorization header.
type CoreClient struct {
	origin     string
	nodeID     string
	credential string
	http       *http.Client
}

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
	tr := &http.Transport{
		Proxy:               proxyFunc,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 15 * time.Second,
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	return &CoreClient{
		origin:     id.CoreURL,
		nodeID:     id.Identity.NodeID,
		credential: id.Credential,
		http: &http.Client{
			Transport:     roots.Transport(tr),
			Timeout:       30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}, nil
}

// Configuration GETs <origin>/api/v1/sandbox-node/configuration?generation=N
// with the node credential and X-OAC-Node-ID, and validates the answer.
func (c *CoreClient) Configuration(ctx context.Context, generation int64) (*Configuration, error) {
	u := c.origin + "/api/v1/sandbox-node/configuration?generation=" + strconv.FormatInt(generation, 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("read configuration from Core %s: %w", c.origin, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.credential)
	req.Header.Set("X-OAC-Node-ID", c.nodeID)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "oac-node-install")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("read configuration from Core %s: %w", c.origin, ctx.Err())
		}
		return nil, fmt.Errorf("read configuration from Core %s: %v; check the Core origin and that the reverse proxy routes /api/v1 to Core", c.origin, transportReason(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, MaxConfigurationSize))
		return nil, &CoreStatusError{Code: resp.StatusCode}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxConfigurationSize+1))
	if err != nil {
		return nil, fmt.Errorf("read configuration from Core %s: %v", c.origin, transportReason(err))
	}
	if len(body) > MaxConfigurationSize {
		return nil, fmt.Errorf("%w: the answer is larger than %d bytes", ErrCoreAnswer, MaxConfigurationSize)
	}
	return ParseConfiguration(body)
}

// transportReason is a transport error without the URL (which carries the
// query) and without anything a proxy setting holds.
func transportReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if clock := trust.Explain(err, time.Now()); clock != nil {
		return clock.Error()
	}
	var ce *tls.CertificateVerificationError
	if errors.As(err, &ce) {
		return "Core's TLS certificate is not trusted"
	}
	return err.Error()
}

// configurationAnswer is the configuration answer as Core sends it.
type configurationAnswer struct {
	InstallationID      string          `json:"installation_id"`
	Provider            string          `json:"provider"`
	CoreURL             string          `json:"core_url"`
	Generation          int64           `json:"generation"`
	Specification       json.RawMessage `json:"specification"`
	SpecificationDigest string          `json:"specification_digest"`
	MaxActive           int64           `json:"max_active"`
	MaxRetained         int64           `json:"max_retained"`
}

// Unknown top-level keys are skipped: newer Cores add some. The
// specification is strict, because its digest covers it.
var configurationFormat = strictjson.Format{MaxSize: MaxConfigurationSize, AllowUnknownKeys: true}

// printableASCII reports whether s is non-empty printable ASCII without
// spaces.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return s != ""
}

// ParseConfiguration validates Core's configuration answer in itself.
func ParseConfiguration(body []byte) (*Configuration, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrCoreAnswer, fmt.Sprintf(format, args...))
	}
	var a configurationAnswer
	if err := configurationFormat.Decode(body, &a); err != nil {
		return nil, bad("%v", err)
	}
	c := &Configuration{
		InstallationID:      a.InstallationID,
		Provider:            a.Provider,
		CoreURL:             a.CoreURL,
		Generation:          a.Generation,
		SpecificationDigest: a.SpecificationDigest,
		MaxActive:           a.MaxActive,
		MaxRetained:         a.MaxRetained,
	}
	for _, r := range []struct {
		key         string
		n, min, max int64
	}{
		{"generation", c.Generation, 1, math.MaxInt64},
		{"max_active", c.MaxActive, 1, 1000000},
		{"max_retained", c.MaxRetained, c.MaxActive, 1000000},
	} {
		if r.n < r.min || r.n > r.max {
			return nil, bad("%s must be an integer from %d to %d", r.key, r.min, r.max)
		}
	}
	switch c.Provider {
	case release.ProviderDocker, release.ProviderMicrosandbox:
	default:
		return nil, bad("provider %q is not a node provider", c.Provider)
	}
	// The values root compares and prints (never echoed here: a hostile
	// Core chooses them).
	if !ident.CanonicalUUID(c.InstallationID) {
		return nil, bad("installation_id is not a canonical UUID")
	}
	if !printableASCII(c.CoreURL) {
		return nil, bad("core_url holds characters no origin has")
	}
	if _, err := provider.CheckOrigin(strings.TrimSuffix(c.CoreURL, "/")); err != nil {
		return nil, bad("core_url is not an http(s) origin")
	}
	var err error
	if c.Specification, err = release.ParseSpecification(c.Provider, a.Specification); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCoreAnswer, err)
	}
	if !release.IsSHA256(c.SpecificationDigest) || c.Specification.Digest() != c.SpecificationDigest {
		return nil, bad("specification_digest is not the digest of the specification")
	}
	return c, nil
}
