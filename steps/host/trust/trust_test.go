package trust

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/devcore"
)

// The system roots of this test process are one file: the certificate of
// the "public" server below, as a host's bundle would hold a public CA.
// Go reads SSL_CERT_FILE when the process first loads its system roots.
var publicServer = httptest.NewUnstartedServer(http.HandlerFunc(echo))

var requests atomic.Int64

func echo(w http.ResponseWriter, r *http.Request) {
	requests.Add(1)
	b, _ := io.ReadAll(r.Body)
	w.Write(append([]byte(r.Method+" "), b...))
}

func TestMain(m *testing.M) {
	publicServer.StartTLS()
	dir, err := os.MkdirTemp("", "oac-trust-")
	if err != nil {
		panic(err)
	}
	bundle := filepath.Join(dir, "bundle.pem")
	if err := os.WriteFile(bundle, certPEM(publicServer.Certificate()), 0o600); err != nil {
		panic(err)
	}
	os.Setenv("SSL_CERT_FILE", bundle)
	os.Setenv("SSL_CERT_DIR", dir)
	code := m.Run()
	publicServer.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// privateServer serves echo with a certificate of a private CA for hosts;
// it returns the server and the CA's PEM.
func privateServer(t *testing.T, hosts ...string) (*httptest.Server, []byte) {
	t.Helper()
	ca, err := devcore.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ca.ServerConfig(hosts...)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(echo))
	srv.TLS = cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, certPEM(ca.Cert)
}

// transport returns roots of the CA bundle ca and their transport over
// base, closed when the test ends.
func transport(t *testing.T, ca []byte, base *http.Transport) (*Roots, RoundTripper) {
	t.Helper()
	r, err := New(ca)
	if err != nil {
		t.Fatal(err)
	}
	rt := r.Transport(base)
	t.Cleanup(rt.CloseIdleConnections)
	return r, rt
}

func get(t *testing.T, rt RoundTripper, url, body string) (string, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestCAAloneNeedsNoSystemRoots(t *testing.T) {
	srv, ca := privateServer(t, "127.0.0.1")
	_, rt := transport(t, ca, &http.Transport{})
	before := requests.Load()
	got, err := get(t, rt, srv.URL, "hello")
	if err != nil || got != "POST hello" {
		t.Fatalf("request to the CA's server: %q, %v", got, err)
	}
	if n := requests.Load() - before; n != 1 {
		t.Errorf("the server saw %d requests, want 1", n)
	}
	if p, ok := rt.(*pinned); !ok || p.system != nil {
		t.Error("the system roots were loaded for a server the CA alone verifies")
	}
}

// With an operator CA, Core and the console are trusted only with that
// CA: a server the system roots trust (a TLS-inspecting proxy's, say) is
// refused in the handshake, before the request is sent.
func TestTheCAPinsCoreAndTheConsole(t *testing.T) {
	_, ca := privateServer(t, "127.0.0.1")
	_, rt := transport(t, ca, &http.Transport{})
	before := requests.Load()
	_, err := get(t, rt, publicServer.URL, "token")
	var ua x509.UnknownAuthorityError
	if !errors.As(err, &ua) {
		t.Fatalf("a server of the system roots: %v, want an unknown authority", err)
	}
	if n := requests.Load() - before; n != 0 {
		t.Errorf("the server saw %d requests, want none", n)
	}
}

// A redirect to another host (the console's 307 to a release host) is
// verified against the system roots, not the operator's CA; a redirect to
// a host of another private CA is refused.
func TestARedirectToAReleaseHostTrustsTheSystemRoots(t *testing.T) {
	ca, err := devcore.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ca.ServerConfig("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	other, _ := privateServer(t, "127.0.0.1")
	console := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target := publicServer.URL
		if r.URL.Path == "/other" {
			target = other.URL
		}
		http.Redirect(w, r, target+"/artifact", http.StatusTemporaryRedirect)
	}))
	console.TLS = cfg
	console.StartTLS()
	defer console.Close()
	_, rt := transport(t, certPEM(ca.Cert), &http.Transport{})
	client := &http.Client{Transport: rt}
	resp, err := client.Get(console.URL + "/release")
	if err != nil {
		t.Fatalf("a redirect to a server of the system roots: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if _, err := client.Get(console.URL + "/other"); err == nil {
		t.Fatal("a redirect to a server of another private CA was trusted")
	}
}

func TestHostnameIsVerified(t *testing.T) {
	// The operator's CA signed the certificate, for other names than the
	// one asked for: no fallback, and no request.
	srv, ca := privateServer(t)
	_, rt := transport(t, ca, &http.Transport{TLSClientConfig: &tls.Config{ServerName: "core.example"}})
	before := requests.Load()
	_, err := get(t, rt, srv.URL, "")
	var he x509.HostnameError
	if !errors.As(err, &he) {
		t.Fatalf("a certificate without core.example at %s: %v, want a hostname error", srv.URL, err)
	}
	if requests.Load() != before {
		t.Error("the request was sent")
	}
	if p, ok := rt.(*pinned); !ok || p.system != nil {
		t.Error("the system roots were loaded for a hostname mismatch")
	}
}

// unknownAuthority reports whether err is a certificate verification
// failure because no trusted root signed the chain.
func unknownAuthority(err error) bool {
	var ua x509.UnknownAuthorityError
	return errors.As(err, &ua)
}

func TestUnknownEverywhere(t *testing.T) {
	srv, _ := privateServer(t, "127.0.0.1")
	_, ca := privateServer(t, "127.0.0.1")
	_, rt := transport(t, ca, &http.Transport{})
	_, err := get(t, rt, srv.URL, "")
	if !unknownAuthority(err) {
		t.Fatalf("a server no root signed: %v, want an unknown authority", err)
	}
}

func TestWithoutCAOrWithOnly(t *testing.T) {
	r, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	rt := r.Transport(&http.Transport{})
	if got, err := get(t, rt, publicServer.URL, "x"); err != nil || got != "POST x" {
		t.Fatalf("system roots: %q, %v", got, err)
	}
	srv, ca := privateServer(t, "127.0.0.1")
	if _, err := get(t, rt, srv.URL, ""); !unknownAuthority(err) {
		t.Fatalf("a private server with the system roots: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	only := Only(pool).Transport(&http.Transport{})
	if _, err := get(t, only, srv.URL, ""); err != nil {
		t.Fatalf("Only: %v", err)
	}
	if _, err := get(t, only, publicServer.URL, ""); !unknownAuthority(err) {
		t.Fatalf("Only trusted the system roots: %v", err)
	}
	if _, err := New([]byte("not a certificate")); !errors.Is(err, ErrNoCertificate) {
		t.Fatalf("New of a bundle without a certificate: %v", err)
	}
}

// A certificate the CA signed, verified at a time outside its validity (a
// host clock years off), is a clock problem naming the host's time, not an
// untrusted CA; other failures are left to the caller's own words.
func TestCertificateOutsideItsValidityIsAClockProblem(t *testing.T) {
	srv, ca := privateServer(t)
	for _, off := range []time.Duration{30 * 365 * 24 * time.Hour, -30 * 365 * 24 * time.Hour} {
		clock := time.Now().Add(off)
		_, rt := transport(t, ca, &http.Transport{TLSClientConfig: &tls.Config{Time: func() time.Time { return clock }}})
		_, err := get(t, rt, srv.URL, "")
		if err == nil {
			t.Fatalf("clock %s: the request went through", clock)
		}
		got := Explain(err, clock)
		if !errors.Is(got, ErrClock) || !strings.Contains(got.Error(), clock.UTC().Format("2006-01-02")) || !strings.Contains(got.Error(), "timedatectl") {
			t.Errorf("clock %s: %v, want the clock problem naming the host's time", clock, got)
		}
	}
	// An unknown authority is no clock problem.
	_, rt := transport(t, nil, &http.Transport{})
	_, err := get(t, rt, srv.URL, "")
	if err == nil || Explain(err, time.Now()) != nil {
		t.Errorf("unknown authority: %v, explained as %v", err, Explain(err, time.Now()))
	}
}
