package download

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// payload returns n deterministic pseudo-random bytes.
func payload(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// seen is one request a test server received.
type seen struct {
	Path   string
	Header http.Header
}

// recorder records the requests a handler saw.
type recorder struct {
	mu   sync.Mutex
	reqs []seen
}

func (r *recorder) add(req *http.Request) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, seen{Path: req.URL.Path, Header: req.Header.Clone()})
	return len(r.reqs)
}

func (r *recorder) all() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.reqs...)
}

// tlsServer starts an HTTP/1.1 TLS server closed with the test.
func tlsServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// testOptions trusts the httptest certificate (shared by every httptest TLS
// server) and retries without real sleeps.
func testOptions(srv *httptest.Server) Options {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return Options{
		RootCAs:     pool,
		RetrySleeps: []time.Duration{time.Millisecond, 2 * time.Millisecond},
		StallWindow: 5 * time.Second,
	}
}

func newTestClient(t *testing.T, o Options) *Client {
	t.Helper()
	c, err := NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// assertTargetSafe checks the rule every case shares: the target is absent
// or holds exactly the verified bytes with the requested mode.
func assertTargetSafe(t *testing.T, target string, data []byte, mode os.FileMode) {
	t.Helper()
	got, err := os.ReadFile(target)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatalf("read target: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("target holds %d unverified bytes", len(got))
	}
	fi, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != mode {
		t.Fatalf("target mode %v, want %v", fi.Mode().Perm(), mode)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func targetIn(t *testing.T) string {
	return filepath.Join(t.TempDir(), "oac-0123456789abcdef0123456789abcdef01234567-linux-amd64-runtime.tar.gz")
}
