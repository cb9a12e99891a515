package trust

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// ErrNoCertificate: a CA bundle holds no PEM certificate.
var ErrNoCertificate = errors.New("holds no PEM certificate")

// Roots are what a client trusts. The zero value and nil trust the system
// roots. Roots are safe for concurrent use.
type Roots struct {
	// ca is the operator's CA alone; nil when there is none.
	ca *x509.CertPool
	// only replaces the system roots (Only).
	only *x509.CertPool
}

// New returns the roots of the CA bundle caPEM, or the system roots when
// it is empty. It parses caPEM now and does not load the system roots.
func New(caPEM []byte) (*Roots, error) {
	if len(caPEM) == 0 {
		return &Roots{}, nil
	}
	ca := x509.NewCertPool()
	if !ca.AppendCertsFromPEM(caPEM) {
		return nil, ErrNoCertificate
	}
	return &Roots{ca: ca}, nil
}

// Only returns roots that are exactly pool, never the system roots (a
// console or Core with a private CA in tests and tools).
func Only(pool *x509.CertPool) *Roots { return &Roots{only: pool} }

// RoundTripper is an http.RoundTripper whose idle connections can be
// closed, as *http.Transport's can.
type RoundTripper interface {
	http.RoundTripper
	CloseIdleConnections()
}

// Transport returns a transport like base (which it does not change) that
// verifies servers against r. Without an operator CA, or with Only's
// roots, it is a clone of base with those roots. With a CA, every request
// to Core or the console trusts exactly that bundle, never the system
// roots: a TLS-inspecting proxy or any certificate the system trusts for
// the name is refused (CONTRACT §10, "Core CA"). Only a redirect to
// another host — an artifact the console redirects to a release host —
// trusts the system roots instead, which are then loaded once.
func (r *Roots) Transport(base *http.Transport) RoundTripper {
	switch {
	case r == nil || (r.only == nil && r.ca == nil):
		return withRoots(base, nil)
	case r.only != nil:
		return withRoots(base, r.only)
	}
	return &pinned{base: base, ca: withRoots(base, r.ca)}
}

// withRoots clones base with roots as its TLS roots (nil: the system's).
func withRoots(base *http.Transport, roots *x509.CertPool) *http.Transport {
	t := base.Clone()
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	t.TLSClientConfig.RootCAs = roots
	return t
}

// pinned is the transport of roots with an operator CA.
type pinned struct {
	base *http.Transport
	ca   *http.Transport // the CA alone

	mu     sync.Mutex
	system *http.Transport // the system roots, for redirects to other hosts
}

func (p *pinned) RoundTrip(req *http.Request) (*http.Response, error) {
	if !redirectElsewhere(req) {
		return p.ca.RoundTrip(req)
	}
	p.mu.Lock()
	if p.system == nil {
		p.system = withRoots(p.base, nil)
	}
	system := p.system
	p.mu.Unlock()
	return system.RoundTrip(req)
}

// redirectElsewhere reports whether req follows a redirect (http.Client
// sets the response that caused it) to another host than the request that
// was redirected.
func redirectElsewhere(req *http.Request) bool {
	prev := req.Response
	return prev != nil && prev.Request != nil && prev.Request.URL != nil && req.URL != nil &&
		!strings.EqualFold(prev.Request.URL.Host, req.URL.Host)
}

func (p *pinned) CloseIdleConnections() {
	p.ca.CloseIdleConnections()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.system != nil {
		p.system.CloseIdleConnections()
	}
}

// ErrClock: the server's certificate is not valid at this host's time:
// expired, or not yet valid — usually the host's clock is wrong, which the
// operator fixes there, not by trusting another CA.
var ErrClock = errors.New("the server's TLS certificate is not valid at this host's time")

// Explain says, in the operator's terms, why certificate verification
// refused a server: a certificate outside its validity at this host's
// time is a clock problem (ErrClock, with the host's time), anything
// else "" (the caller's own message stands).
func Explain(err error, now time.Time) error {
	var inv x509.CertificateInvalidError
	if errors.As(err, &inv) && inv.Reason == x509.Expired {
		return fmt.Errorf("%w (the host's clock says %s UTC): check the clock with `timedatectl` and set it right, then rerun the same command",
			ErrClock, now.UTC().Format("2006-01-02 15:04:05"))
	}
	return nil
}
