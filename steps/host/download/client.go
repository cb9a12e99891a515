package download

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
)

// Defaults of Options.
const (
	DefaultConnectTimeout  = 15 * time.Second
	DefaultResponseTimeout = 30 * time.Second
	DefaultMetadataTimeout = 30 * time.Second
	DefaultStallWindow     = 60 * time.Second
	DefaultStallBytes      = 64 << 10
	// MaxMetadata is the contract's limit on a metadata file (1 MiB).
	MaxMetadata = 1 << 20
)

// DefaultRetrySleeps are the sleeps between the three attempts.
var DefaultRetrySleeps = []time.Duration{1 * time.Second, 2 * time.Second}

// Options shape a Client. The zero value is usable: system roots, no
// proxy, the contract's timeouts, stall rule and retry sleeps.
type Options struct {
	// RootCAs replaces the system roots, for a console with a private CA.
	RootCAs *x509.CertPool
	// Trust, when RootCAs is nil, is what the client trusts (the system
	// roots plus the operator's CA, the system roots loaded only when
	// needed); nil trusts the system roots.
	Trust *trust.Roots
	// ConnectTimeout bounds the TCP connect and the TLS handshake each.
	ConnectTimeout time.Duration
	// ResponseTimeout bounds the wait for response headers.
	ResponseTimeout time.Duration
	// MetadataTimeout bounds one metadata attempt as a whole.
	MetadataTimeout time.Duration
	// StallWindow and StallBytes: a download that receives less than
	// StallBytes within any StallWindow stops (60 s, 64 KiB).
	StallWindow time.Duration
	StallBytes  int64
	// RetrySleeps are the sleeps before the second, third, ... attempt;
	// nil means DefaultRetrySleeps. Its length plus one is the number of
	// attempts.
	RetrySleeps []time.Duration
	// Proxy is the proxy snapshot (proxy.FromEnviron(os.Environ())).
	Proxy proxy.Env
	// UserAgent is sent with every request; default "oac-node-install".
	UserAgent string
}

// Client fetches metadata and downloads artifacts. It is safe for
// concurrent use; Close releases its idle connections.
type Client struct {
	metadata  *http.Client // never follows redirects
	artifact  *http.Client // follows HTTPS redirects, Range/If-Range only
	transport trust.RoundTripper
	secrets   []string

	metadataTimeout time.Duration
	stallWindow     time.Duration
	stallBytes      int64
	sleeps          []time.Duration
	userAgent       string
}

// NewClient builds a Client. It fails only on an unusable proxy setting,
// and its message never contains the setting's value.
func NewClient(o Options) (*Client, error) {
	sel, err := o.Proxy.Selector()
	if err != nil {
		return nil, fmt.Errorf("proxy settings: %w", err)
	}
	c := &Client{
		secrets:         sel.Secrets(),
		metadataTimeout: orDuration(o.MetadataTimeout, DefaultMetadataTimeout),
		stallWindow:     orDuration(o.StallWindow, DefaultStallWindow),
		stallBytes:      o.StallBytes,
		sleeps:          o.RetrySleeps,
		userAgent:       o.UserAgent,
	}
	if c.stallBytes <= 0 {
		c.stallBytes = DefaultStallBytes
	}
	if c.sleeps == nil {
		c.sleeps = DefaultRetrySleeps
	}
	if c.userAgent == "" {
		c.userAgent = "oac-node-install"
	}
	connect := orDuration(o.ConnectTimeout, DefaultConnectTimeout)
	dialer := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	base := &http.Transport{
		Proxy:                 sel.Proxy,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   connect,
		ResponseHeaderTimeout: orDuration(o.ResponseTimeout, DefaultResponseTimeout),
		// HTTP/1.1 only: an empty TLSNextProto map disables HTTP/2.
		ForceAttemptHTTP2: false,
		TLSNextProto:      map[string]func(string, *tls.Conn) http.RoundTripper{},
		// Sizes and hashes are of the bytes as served: no transparent gzip.
		DisableCompression:  true,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     30 * time.Second,
	}
	if o.RootCAs != nil {
		c.transport = base
	} else {
		c.transport = o.Trust.Transport(base)
	}
	c.metadata = &http.Client{
		Transport: c.transport,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	c.artifact = &http.Client{Transport: c.transport, CheckRedirect: checkArtifactRedirect}
	return c, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.transport.CloseIdleConnections() }

// checkArtifactRedirect follows only HTTPS redirects without credentials
// and rebuilds the header set from scratch: Range and If-Range of the
// first request, nothing else (no Authorization, Cookie, Referer or any
// custom header).
func checkArtifactRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return fmt.Errorf("%w: more than 10 redirects", ErrRedirect)
	}
	if req.URL.Scheme != "https" {
		return fmt.Errorf("%w: redirect to a non-HTTPS URL (%s)", ErrRedirect, displayURL(req.URL))
	}
	if req.URL.User != nil {
		return fmt.Errorf("%w: redirect to a URL with credentials (%s)", ErrRedirect, displayURL(req.URL))
	}
	first := via[0].Header
	h := http.Header{}
	for _, k := range []string{"Range", "If-Range", "User-Agent"} {
		if v := first.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	req.Header = h
	return nil
}

func orDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Sleep waits d or until ctx ends (whose error it returns).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// transportFailure classifies an error of http.Client.Do or of reading a
// body: certificate and redirect refusals are final, everything else is
// worth another attempt.
func transportFailure(err error) error {
	// Go's message quotes the URL, credentials of a redirect target
	// included: show it without them.
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = displayURLString(ue.URL)
	}
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
	)
	switch {
	case errors.Is(err, ErrRedirect),
		errors.As(err, &unknown), errors.As(err, &hostname),
		errors.As(err, &invalid), errors.As(err, &verify):
		return err
	}
	return retryable{err}
}

// CertPoolFromPEM returns a pool of the certificates in pemData (the
// operator's --core-ca file), to use as Options.RootCAs. It fails when the
// data holds no certificate.
func CertPoolFromPEM(pemData []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemData) {
		return nil, errors.New("no PEM certificate found")
	}
	return pool, nil
}
