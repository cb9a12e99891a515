package install

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

func TestCoreReader(t *testing.T) {
	rel := generationtest.BuildRelease(t, generationtest.CommitA)
	spec := rel.Spec(t, release.ProviderDocker, 2)
	raw, _ := spec.MarshalJSON()
	answer := func(coreURL, id string) []byte {
		b, _ := json.Marshal(map[string]any{"installation_id": id, "provider": "docker", "core_url": coreURL, "generation": 1,
			"specification": json.RawMessage(raw), "specification_digest": spec.Digest(), "max_active": 2, "max_retained": 4})
		return b
	}
	const token = "enroll-token-4f1c"
	for _, tc := range []struct {
		name     string
		provider string
		serve    func(w http.ResponseWriter, r *http.Request, url string, n int)
		want     string // "" for success
		requests int32
	}{
		{"ok", "", func(w http.ResponseWriter, r *http.Request, url string, n int) { w.Write(answer(url, testID)) }, "", 1},
		{"provider asserted", "docker", func(w http.ResponseWriter, r *http.Request, url string, n int) { w.Write(answer(url, testID)) }, "", 1},
		{"other provider", "microsandbox", func(w http.ResponseWriter, r *http.Request, url string, n int) { w.Write(answer(url, testID)) }, "uses the provider docker", 1},
		{"expired", "", func(w http.ResponseWriter, r *http.Request, url string, n int) { w.WriteHeader(401) }, "expired or was already used", 1},
		{"web instead of core", "", func(w http.ResponseWriter, r *http.Request, url string, n int) { w.WriteHeader(404) }, "must reach Core", 1},
		{"resetting", "", func(w http.ResponseWriter, r *http.Request, url string, n int) { w.WriteHeader(409) }, "resetting", 1},
		{"other status", "", func(w http.ResponseWriter, r *http.Request, url string, n int) { w.WriteHeader(418) }, "(HTTP 418)", 1},
		{"redirect", "", func(w http.ResponseWriter, r *http.Request, url string, n int) {
			http.Redirect(w, r, "https://elsewhere.example/", 302)
		}, "(HTTP 302)", 1},
		{"transient then ok", "", func(w http.ResponseWriter, r *http.Request, url string, n int) {
			if n < 3 {
				w.WriteHeader(503)
				return
			}
			w.Write(answer(url, testID))
		}, "", 3},
		{"always unavailable", "", func(w http.ResponseWriter, r *http.Request, url string, n int) { w.WriteHeader(503) }, "(HTTP 503)", 3},
		{"public URL changed", "", func(w http.ResponseWriter, r *http.Request, url string, n int) {
			w.Write(answer("https://core.example", testID))
		}, "public URL changed", 1},
		{"other installation", "", func(w http.ResponseWriter, r *http.Request, url string, n int) {
			w.Write(answer(url, "11111111-2222-4333-8444-555555555555"))
		}, "answered for installation", 1},
		{"too large", "", func(w http.ResponseWriter, r *http.Request, url string, n int) {
			w.Write([]byte(strings.Repeat(" ", 20000)))
		}, "larger than", 1},
		{"not json", "", func(w http.ResponseWriter, r *http.Request, url string, n int) { w.Write([]byte("<html>")) }, "invalid configuration from Core", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			var url string
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				k := n.Add(1)
				if r.URL.Path != "/api/v1/sandbox-node/configuration" || r.URL.RawQuery != "" || r.Header.Get("Authorization") != "Bearer "+token || r.Header.Get("X-OAC-Node-ID") != "" {
					t.Errorf("request %s %q %v", r.URL, r.Header.Get("Authorization"), r.Header)
				}
				tc.serve(w, r, url, int(k))
			}))
			defer srv.Close()
			url = srv.URL
			roots := x509.NewCertPool()
			roots.AddCert(srv.Certificate())
			c := CoreReader{Roots: trust.Only(roots), Sleeps: []time.Duration{time.Millisecond, time.Millisecond}}
			conf, body, err := c.Read(context.Background(), Options{InstallationID: testID, CoreURL: srv.URL, Provider: tc.provider}, token)
			if tc.want == "" {
				if err != nil || conf.Generation != 1 || len(body) == 0 {
					t.Fatalf("got %v %v", conf, err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), token) {
				t.Fatalf("the error shows the token: %v", err)
			}
			if got := n.Load(); got != tc.requests {
				t.Fatalf("%d requests, want %d", got, tc.requests)
			}
		})
	}
}

// An untrusted certificate names --core-ca.
func TestCoreReaderUntrusted(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	_, _, err := CoreReader{Roots: trust.Only(x509.NewCertPool()), Sleeps: []time.Duration{}}.Read(context.Background(), Options{InstallationID: testID, CoreURL: srv.URL}, "t")
	if err == nil || !strings.Contains(err.Error(), "--core-ca") {
		t.Fatalf("got %v", err)
	}
}
