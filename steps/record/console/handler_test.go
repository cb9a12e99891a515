package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/release"
)

const testHost = "console.example:8443"

// servedPayload publishes release A (active; the image is held only by the
// release base) and release B (every artifact held, no base URL).
func servedPayload(t *testing.T) (payload string, a, b *fixture) {
	t.Helper()
	payload = t.TempDir()
	a = newFixture(t, commitA, "https://releases.example/oac/build-"+commitA)
	b = newFixture(t, commitB, "")
	if err := Publish(payload, a.without(release.PathRuntimeImage)); err != nil {
		t.Fatal(err)
	}
	if err := Publish(payload, b.without(release.PathMicroHelper)); err != nil {
		t.Fatal(err)
	}
	if err := Activate(payload, commitA); err != nil {
		t.Fatal(err)
	}
	return payload, a, b
}

func do(h http.Handler, method, target string, mod func(*http.Request)) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "https://"+testHost+"/", nil)
	u, err := url.ParseRequestURI(target)
	if err != nil {
		// Targets url.Parse refuses (a NUL) are set as a path directly.
		u = &url.URL{Path: target}
	}
	r.URL = u
	r.RequestURI = target
	if mod != nil {
		mod(r)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHandlerRoutes(t *testing.T) {
	payload, a, b := servedPayload(t)
	h := Handler(payload, testHost)
	art := func(fx *fixture, path string) string { return fx.names[path] }
	tests := []struct {
		name     string
		method   string
		target   string
		mod      func(*http.Request)
		status   int
		body     string // checked when status is 200
		location string
		etag     string
	}{
		{name: "manifest", target: "/node-install/manifest.json", status: 200, body: string(a.files.Files[release.ManifestName])},
		{name: "sums", target: "/node-install/SHA256SUMS", status: 200, body: string(a.files.Files[release.SumsName])},
		{name: "installer", target: "/node-install/oac-node-install", status: 200, body: string(a.files.Files[release.InstallerName])},
		{name: "seccomp", target: "/node-install/runtime/seccomp.json", status: 200, body: string(a.files.Files[release.SeccompName])},
		{name: "query ignored", target: "/node-install/manifest.json?x=1", status: 200, body: string(a.files.Files[release.ManifestName])},
		{name: "head", method: "HEAD", target: "/node-install/manifest.json", status: 200},
		{name: "legacy installer not published", target: "/node-install/node-install.pyz", status: 404},
		{name: "held artifact", target: "/node-install/artifacts/" + art(a, release.PathNode), status: 200,
			body: string(a.content[art(a, release.PathNode)]), etag: `"` + a.m.Artifacts[release.PathNode].SHA256 + `"`},
		{name: "artifact not held redirects", target: "/node-install/artifacts/" + art(a, release.PathRuntimeImage), status: 307,
			location: "https://releases.example/oac/build-" + commitA + "/" + art(a, release.PathRuntimeImage)},
		{name: "head redirect", method: "HEAD", target: "/node-install/artifacts/" + art(a, release.PathRuntimeImage), status: 307},
		{name: "artifact of another release under the active prefix", target: "/node-install/artifacts/" + art(b, release.PathNode), status: 404},
		{name: "undeclared artifact", target: "/node-install/artifacts/oac-" + commitA + "-linux-amd64-other", status: 404},
		{name: "declared artifact outside the catalog", target: "/node-install/artifacts/" + release.FileName(commitA, "daemon"), status: 404},
		{name: "artifact name unsafe", target: "/node-install/artifacts/..", status: 404},

		{name: "versioned manifest", target: "/node-install/releases/" + commitB + "/manifest.json", status: 200, body: string(b.files.Files[release.ManifestName])},
		{name: "versioned seccomp", target: "/node-install/releases/" + commitB + "/runtime/seccomp.json", status: 200, body: string(b.files.Files[release.SeccompName])},
		{name: "versioned artifact", target: "/node-install/releases/" + commitB + "/artifacts/" + art(b, release.PathNode), status: 200, body: string(b.content[art(b, release.PathNode)])},
		{name: "versioned artifact not held without base url", target: "/node-install/releases/" + commitB + "/artifacts/" + art(b, release.PathMicroHelper), status: 404},
		{name: "versioned artifact of the active release redirects", target: "/node-install/releases/" + commitA + "/artifacts/" + art(a, release.PathRuntimeImage), status: 307,
			location: "https://releases.example/oac/build-" + commitA + "/" + art(a, release.PathRuntimeImage)},
		{name: "versioned artifact of another release", target: "/node-install/releases/" + commitB + "/artifacts/" + art(a, release.PathNode), status: 404},
		{name: "unknown release", target: "/node-install/releases/" + strings.Repeat("c", 40) + "/manifest.json", status: 404},
		{name: "unknown release artifact", target: "/node-install/releases/" + strings.Repeat("c", 40) + "/artifacts/" + release.FileName(strings.Repeat("c", 40), "msb"), status: 404},
		{name: "release not a commit", target: "/node-install/releases/latest/manifest.json", status: 404},
		{name: "release uppercase", target: "/node-install/releases/" + strings.ToUpper(commitB) + "/manifest.json", status: 404},
		{name: "release directory", target: "/node-install/releases/" + commitB, status: 404},
		{name: "release other file", target: "/node-install/releases/" + commitB + "/runtime", status: 404},
		{name: "nested versioned", target: "/node-install/releases/" + commitB + "/releases/" + commitB + "/manifest.json", status: 404},

		{name: "post", method: "POST", target: "/node-install/manifest.json", status: 405},
		{name: "put", method: "PUT", target: "/node-install/manifest.json", status: 405},
		{name: "options", method: "OPTIONS", target: "/node-install/manifest.json", status: 405},
		{name: "host mismatch", target: "/node-install/manifest.json", mod: func(r *http.Request) { r.Host = "evil.example:8443" }, status: 404},
		{name: "host without port", target: "/node-install/manifest.json", mod: func(r *http.Request) { r.Host = "console.example" }, status: 404},
		{name: "host case", target: "/node-install/manifest.json", mod: func(r *http.Request) { r.Host = "CONSOLE.example:8443" }, status: 200},
		{name: "root", target: "/node-install/", status: 404},
		{name: "prefix without slash", target: "/node-install", status: 404},
		{name: "other route", target: "/other/manifest.json", status: 404},
		{name: "unknown name", target: "/node-install/foo", status: 404},
		{name: "payload internals", target: "/node-install/active.json", status: 404},
		{name: "lock file", target: "/node-install/.publish.lock", status: 404},
		{name: "other runtime file", target: "/node-install/runtime/other.json", status: 404},
		{name: "dot segment", target: "/node-install/./manifest.json", status: 404},
		{name: "dotdot segment", target: "/node-install/runtime/../manifest.json", status: 404},
		{name: "double slash", target: "/node-install//manifest.json", status: 404},
		{name: "trailing slash", target: "/node-install/manifest.json/", status: 404},
		{name: "percent encoded letter", target: "/node-install/m%61nifest.json", status: 404},
		{name: "percent encoded slash", target: "/node-install/runtime%2Fseccomp.json", status: 404},
		{name: "percent encoded dots", target: "/node-install/%2e%2e/node-install/manifest.json", status: 404},
		{name: "backslash", target: "/node-install/runtime\\seccomp.json", status: 404},
		{name: "nul", target: "/node-install/manifest.json\x00", status: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = "GET"
			}
			w := do(h, method, tt.target, tt.mod)
			if w.Code != tt.status {
				t.Fatalf("%s %q = %d, want %d (body %q)", method, tt.target, w.Code, tt.status, w.Body.String())
			}
			hd := w.Result().Header
			for k, v := range map[string]string{"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"} {
				if got := hd.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			switch tt.status {
			case 200:
				if ct := hd.Get("Content-Type"); ct != "application/octet-stream" {
					t.Errorf("Content-Type = %q", ct)
				}
				if tt.body != "" && w.Body.String() != tt.body {
					t.Errorf("body %q, want %q", w.Body.String(), tt.body)
				}
				if method == "HEAD" && (w.Body.Len() != 0 || hd.Get("Content-Length") == "") {
					t.Errorf("HEAD: body %d bytes, Content-Length %q", w.Body.Len(), hd.Get("Content-Length"))
				}
				if tt.etag != "" && hd.Get("ETag") != tt.etag {
					t.Errorf("ETag = %q, want %q", hd.Get("ETag"), tt.etag)
				}
			case 307:
				if tt.location != "" && hd.Get("Location") != tt.location {
					t.Errorf("Location = %q, want %q", hd.Get("Location"), tt.location)
				}
				if w.Body.Len() != 0 {
					t.Errorf("redirect has a body %q", w.Body.String())
				}
			case 405:
				if hd.Get("Allow") != "GET, HEAD" {
					t.Errorf("Allow = %q", hd.Get("Allow"))
				}
			}
		})
	}
}

func TestHandlerRange(t *testing.T) {
	payload, a, _ := servedPayload(t)
	h := Handler(payload, testHost)
	name := a.names[release.PathNode]
	data := string(a.content[name])
	etag := `"` + a.m.Artifacts[release.PathNode].SHA256 + `"`
	target := "/node-install/artifacts/" + name
	tests := []struct {
		name   string
		header map[string]string
		status int
		body   string
	}{
		{"range", map[string]string{"Range": "bytes=5-"}, 206, data[5:]},
		{"if-range etag matches", map[string]string{"Range": "bytes=5-", "If-Range": etag}, 206, data[5:]},
		{"if-range etag differs", map[string]string{"Range": "bytes=5-", "If-Range": `"other"`}, 200, data},
		{"range past the end", map[string]string{"Range": "bytes=100000-"}, 416, ""},
		{"if-none-match", map[string]string{"If-None-Match": etag}, 304, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(h, "GET", target, func(r *http.Request) {
				for k, v := range tt.header {
					r.Header.Set(k, v)
				}
			})
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d", w.Code, tt.status)
			}
			if tt.body != "" && w.Body.String() != tt.body {
				t.Fatalf("body %q, want %q", w.Body.String(), tt.body)
			}
			if tt.status == 206 {
				want := "bytes 5-" + strconv.Itoa(len(data)-1) + "/" + strconv.Itoa(len(data))
				if got := w.Result().Header.Get("Content-Range"); got != want {
					t.Fatalf("Content-Range %q, want %q", got, want)
				}
			}
		})
	}
}

func TestHandlerFlatPayload(t *testing.T) {
	payload := t.TempDir()
	fx := newFixture(t, commitA, "")
	for name, data := range fx.files.Files {
		p := filepath.Join(payload, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(payload, "artifacts"), 0o700)
	node := fx.names[release.PathNode]
	if err := os.WriteFile(filepath.Join(payload, "artifacts", node), fx.content[node], 0o600); err != nil {
		t.Fatal(err)
	}
	h := Handler(payload, testHost)
	for target, want := range map[string]string{
		"/node-install/manifest.json":        string(fx.files.Files[release.ManifestName]),
		"/node-install/runtime/seccomp.json": string(fx.files.Files[release.SeccompName]),
		"/node-install/artifacts/" + node:    string(fx.content[node]),
	} {
		w := do(h, "GET", target, nil)
		if w.Code != 200 || w.Body.String() != want {
			t.Errorf("GET %s = %d %q", target, w.Code, w.Body.String())
		}
	}
	if w := do(h, "GET", "/node-install/artifacts/"+fx.names[release.PathRuntimeImage], nil); w.Code != 404 {
		t.Errorf("missing artifact without base url = %d", w.Code)
	}

	// A broken pointer is a server error, not a guess.
	if err := os.WriteFile(filepath.Join(payload, ActiveName), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if w := do(h, "GET", "/node-install/manifest.json", nil); w.Code != 500 {
		t.Errorf("with a broken active.json: %d", w.Code)
	}
}

// TestHandlerOverHTTP serves through a real server and client, where the
// request line is parsed by net/http.
func TestHandlerOverHTTP(t *testing.T) {
	payload, a, _ := servedPayload(t)
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	defer srv.Close()
	h = Handler(payload, strings.TrimPrefix(srv.URL, "http://"))
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(srv.URL + "/node-install/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != string(a.files.Files[release.ManifestName]) {
		t.Fatalf("GET manifest = %d", resp.StatusCode)
	}
	resp, err = client.Get(srv.URL + "/node-install/artifacts/" + a.names[release.PathRuntimeImage])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 307 {
		t.Fatalf("GET missing artifact = %d", resp.StatusCode)
	}
	resp, err = client.Get(srv.URL + "/node-install/%2e%2e/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("GET encoded dots = %d", resp.StatusCode)
	}
}
