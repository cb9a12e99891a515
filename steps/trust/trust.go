// Package trust holds the roots a client of Core or the console trusts —
// the operator's CA bundle (--core-ca, or the node's retained copy) and
// the system roots — and the transports that verify servers against them.
//
// The system roots are loaded only when a server's certificate needs them:
// parsing them costs a process about 15 ms of CPU (Go reads the bundle and
// every file of /etc/ssl/certs), and every service-account child is a
// process of its own. A client with an operator CA first verifies against
// that CA alone with crypto/tls's own verification; only a certificate of
// an unknown authority makes it load the system roots and try again with
// the system roots plus the CA, which is what it trusts in any case. The
// first attempt fails in the TLS handshake, before any byte of the request
// is sent, so the request is sent once.
package trust

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// ErrNoCertificate: a CA bundle holds no PEM certificate.
var ErrNoCertificate = errors.New("holds no PEM certificate")

// Roots are what a client trusts. The zero value and nil trust the system
// roots. Roots are safe for concurrent use.
type Roots struct {
	// ca is the operator's CA alone; nil when there is none.
	ca *x509.CertPool
	// caPEM is the bundle ca was parsed from, added to the system roots.
	caPEM []byte
	// only replaces the system roots (Only).
	only *x509.CertPool

	once sync.Once
	all  *x509.CertPool
	err  error
}

// New returns the system roots plus the CA bundle caPEM (none when empty).
// It parses caPEM now and does not load the system roots.
func New(caPEM []byte) (*Roots, error) {
	if len(caPEM) == 0 {
		return &Roots{}, nil
	}
	ca := x509.NewCertPool()
	if !ca.AppendCertsFromPEM(caPEM) {
		return nil, ErrNoCertificate
	}
	return &Roots{ca: ca, caPEM: caPEM}, nil
}

// Only returns roots that are exactly pool, never the system roots (a
// console or Core with a private CA in tests and tools).
func Only(pool *x509.CertPool) *Roots { return &Roots{only: pool} }

// Pool returns the whole set as one pool: the system roots plus the CA, or
// Only's pool. The system roots are loaded on the first call.
func (r *Roots) Pool() (*x509.CertPool, error) {
	if r == nil {
		return systemPlus(nil)
	}
	if r.only != nil {
		return r.only, nil
	}
	r.once.Do(func() { r.all, r.err = systemPlus(r.caPEM) })
	return r.all, r.err
}

func systemPlus(caPEM []byte) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if len(caPEM) > 0 && !pool.AppendCertsFromPEM(caPEM) {
		return nil, ErrNoCertificate
	}
	return pool, nil
}

// RoundTripper is an http.RoundTripper whose idle connections can be
// closed, as *http.Transport's can.
type RoundTripper interface {
	http.RoundTripper
	CloseIdleConnections()
}

// Transport returns a transport like base (which it does not change) that
// verifies servers against r. Without an operator CA, or with Only's
// roots, it is a clone of base with those roots. With a CA it first tries
// the CA alone; a handshake that fails on a certificate of an unknown
// authority switches it, for good, to the system roots plus the CA, and
// the request is sent there.
func (r *Roots) Transport(base *http.Transport) RoundTripper {
	switch {
	case r == nil || (r.only == nil && r.ca == nil):
		return withRoots(base, nil)
	case r.only != nil:
		return withRoots(base, r.only)
	}
	return &fallback{r: r, base: base, first: withRoots(base, r.ca)}
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

// fallback is the transport of roots with an operator CA.
type fallback struct {
	r     *Roots
	base  *http.Transport
	first *http.Transport // the CA alone

	switched atomic.Bool
	mu       sync.Mutex
	second   *http.Transport // the system roots plus the CA
}

func (f *fallback) RoundTrip(req *http.Request) (*http.Response, error) {
	if !f.switched.Load() {
		resp, err := f.first.RoundTrip(req)
		if err == nil || !unknownAuthority(err) {
			return resp, err
		}
		// The handshake failed before the request was written; a body
		// the first attempt may have opened is given again.
		hasBody := req.Body != nil && req.Body != http.NoBody
		if hasBody && req.GetBody == nil {
			return nil, err
		}
		f.switched.Store(true)
		f.first.CloseIdleConnections()
		if hasBody {
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, fmt.Errorf("%w; the request body could not be given again: %v", err, gerr)
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
	}
	second, err := f.systemTransport()
	if err != nil {
		return nil, err
	}
	return second.RoundTrip(req)
}

func (f *fallback) systemTransport() (*http.Transport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.second == nil {
		pool, err := f.r.Pool()
		if err != nil {
			return nil, err
		}
		f.second = withRoots(f.base, pool)
	}
	return f.second, nil
}

func (f *fallback) CloseIdleConnections() {
	f.first.CloseIdleConnections()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.second != nil {
		f.second.CloseIdleConnections()
	}
}

// unknownAuthority reports whether err is a certificate verification
// failure because no trusted root signed the chain.
func unknownAuthority(err error) bool {
	var ua x509.UnknownAuthorityError
	return errors.As(err, &ua)
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
