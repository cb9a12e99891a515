package download

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/download/downloadtest"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
)

// closedAddr is an address nothing listens on.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestDownloadThroughProxy(t *testing.T) {
	data := payload(256<<10, 21)
	origin := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serveContent(w, r, data) }))
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serveContent(w, r, data) }))
	defer plain.Close()
	const user, pass = "proxy-user", "p@ss w0rd:secret"
	creds := url.UserPassword(user, pass).String()
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	dead := "http://" + closedAddr(t)

	cases := []struct {
		name     string
		env      map[string]string
		url      string
		proxied  bool
		viaProxy string // expected method of the proxied request
	}{
		{"https through CONNECT with credentials", map[string]string{"https_proxy": "http://" + creds + "@PROXY"}, origin.URL, true, "CONNECT"},
		{"uppercase only", map[string]string{"HTTPS_PROXY": "http://" + creds + "@PROXY"}, origin.URL, true, "CONNECT"},
		{"plain http through forwarding", map[string]string{"http_proxy": "http://" + creds + "@PROXY", "https_proxy": dead}, plain.URL, true, "GET"},
		{"empty lowercase disables uppercase", map[string]string{"https_proxy": "", "HTTPS_PROXY": dead}, origin.URL, false, ""},
		{"NO_PROXY bypasses", map[string]string{"HTTPS_PROXY": dead, "NO_PROXY": "localhost,127.0.0.0/8"}, origin.URL, false, ""},
		{"empty no_proxy disables NO_PROXY", map[string]string{"HTTPS_PROXY": "http://" + creds + "@PROXY", "no_proxy": "", "NO_PROXY": "*"}, origin.URL, true, "CONNECT"},
		{"host without scheme", map[string]string{"https_proxy": creds + "@PROXY"}, origin.URL, true, "CONNECT"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := &downloadtest.Proxy{Auth: auth}
			ps := httptest.NewServer(fake)
			defer ps.Close()
			env := map[string]string{}
			for k, v := range tc.env {
				env[k] = strings.ReplaceAll(v, "PROXY", strings.TrimPrefix(ps.URL, "http://"))
			}
			o := testOptions(origin)
			o.Proxy = proxy.FromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
			c := newTestClient(t, o)
			target := targetIn(t)
			err := c.Download(context.Background(), Request{URL: tc.url + "/artifact", Target: target, Size: int64(len(data)), SHA256: hexSum(data), Mode: 0o600})
			if err != nil {
				t.Fatalf("download: %v", err)
			}
			assertTargetSafe(t, target, data, 0o600)
			methods, auths := fake.Seen()
			if !tc.proxied {
				if len(methods) != 0 {
					t.Fatalf("proxy used: %v", methods)
				}
				return
			}
			if len(methods) != 1 || !strings.HasPrefix(methods[0], tc.viaProxy+" ") {
				t.Fatalf("proxy saw %v, want one %s", methods, tc.viaProxy)
			}
			if auths[0] != auth {
				t.Fatalf("proxy credentials not sent")
			}
		})
	}
}

func TestProxyCredentialsNeverPrinted(t *testing.T) {
	const pass = "Pr0xyS3cret"
	data := payload(1000, 1)
	origin := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serveContent(w, r, data) }))
	deny := httptest.NewServer(&downloadtest.Proxy{Deny: true})
	defer deny.Close()
	denyHost := strings.TrimPrefix(deny.URL, "http://")
	check := func(t *testing.T, err error) {
		t.Helper()
		if err == nil {
			t.Fatal("no error")
		}
		if msg := err.Error(); strings.Contains(msg, pass) || strings.Contains(msg, "alice:") {
			t.Fatalf("credentials printed: %s", msg)
		}
	}
	for _, tc := range []struct{ name, proxy string }{
		{"proxy answers 407", "http://alice:" + pass + "@" + denyHost},
		{"proxy unreachable", "http://alice:" + pass + "@" + closedAddr(t)},
		{"password with reserved characters", "http://alice:" + url.QueryEscape(pass+"/#?") + "@" + closedAddr(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(origin)
			o.Proxy = proxy.Env{HTTPS: proxy.Setting{Value: tc.proxy, Set: true}}
			c := newTestClient(t, o)
			err := c.Download(context.Background(), Request{URL: origin.URL + "/a", Target: targetIn(t), Size: 1000, SHA256: hexSum(data), Mode: 0o600})
			check(t, err)
			if !errors.Is(err, ErrTransfer) {
				t.Fatalf("error %v is not a transfer error", err)
			}
			_, err = c.FetchMetadata(context.Background(), origin.URL+"/manifest.json", 0)
			check(t, err)
		})
	}
	for _, bad := range []string{
		"http://alice:" + pass + "@host:notaport",
		"socks5://alice:" + pass + "@host:1080",
		"http://alice:" + pass + "@",
		"http://alice:" + pass + "@[::1",
	} {
		t.Run("invalid "+bad[:9], func(t *testing.T) {
			_, err := NewClient(Options{Proxy: proxy.Env{HTTPS: proxy.Setting{Value: bad, Set: true}}})
			check(t, err)
		})
	}
}

func TestScrubKeepsChain(t *testing.T) {
	base := &TransferError{Op: "download", File: "f", Err: errors.New("via user:pw@proxy")}
	err := scrub(base, []string{"user:pw", "pw"})
	if strings.Contains(err.Error(), "pw") {
		t.Fatalf("not scrubbed: %v", err)
	}
	var te *TransferError
	if !errors.As(err, &te) || !errors.Is(err, ErrTransfer) {
		t.Fatal("scrubbing lost the error chain")
	}
}
