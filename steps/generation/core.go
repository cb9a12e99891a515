package generation

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/openagentcore/oac-node-install/steps/release"
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

// NewCoreClient returns a client for the node id. roots replaces the
// system roots when not nil (a private CA); proxy selects the proxy of a
// request (nil: none).
func NewCoreClient(id *NodeIdentity, roots *x509.CertPool, proxy func(*http.Request) (*url.URL, error)) *CoreClient {
	tr := &http.Transport{
		Proxy:               proxy,
		TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 15 * time.Second,
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	return &CoreClient{
		origin:     id.CoreURL,
		nodeID:     id.Identity.NodeID,
		credential: id.Credential,
		http: &http.Client{
			Transport:     tr,
			Timeout:       30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
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
	var ce *tls.CertificateVerificationError
	if errors.As(err, &ce) {
		return "Core's TLS certificate is not trusted"
	}
	return err.Error()
}

// ParseConfiguration validates Core's configuration answer in itself.
// Unknown top-level keys are ignored (newer Cores add some); the
// specification is strict, because its digest covers it.
func ParseConfiguration(body []byte) (*Configuration, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrCoreAnswer, fmt.Sprintf(format, args...))
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		return nil, bad("not a JSON object")
	}
	str := func(key string) (string, error) {
		var s string
		raw, ok := top[key]
		if !ok || len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return "", bad("%s must be a string", key)
		}
		return s, nil
	}
	integer := func(key string, min, max int64) (int64, error) {
		raw := string(top[key])
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != raw || n < min || n > max {
			return 0, bad("%s must be an integer from %d to %d", key, min, max)
		}
		return n, nil
	}
	c := &Configuration{}
	var err error
	if c.InstallationID, err = str("installation_id"); err != nil {
		return nil, err
	}
	if c.Provider, err = str("provider"); err != nil {
		return nil, err
	}
	if c.CoreURL, err = str("core_url"); err != nil {
		return nil, err
	}
	if c.SpecificationDigest, err = str("specification_digest"); err != nil {
		return nil, err
	}
	if c.Generation, err = integer("generation", 1, math.MaxInt64); err != nil {
		return nil, err
	}
	if c.MaxActive, err = integer("max_active", 1, 1000000); err != nil {
		return nil, err
	}
	if c.MaxRetained, err = integer("max_retained", c.MaxActive, 1000000); err != nil {
		return nil, err
	}
	switch c.Provider {
	case release.ProviderDocker, release.ProviderMicrosandbox:
	default:
		return nil, bad("provider %q is not a node provider", c.Provider)
	}
	raw, ok := top["specification"]
	if !ok {
		return nil, bad("specification is missing")
	}
	if c.Specification, err = release.ParseSpecification(c.Provider, raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCoreAnswer, err)
	}
	if !release.IsSHA256(c.SpecificationDigest) || c.Specification.Digest() != c.SpecificationDigest {
		return nil, bad("specification_digest is not the digest of the specification")
	}
	return c, nil
}
