package download

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFetchMetadata(t *testing.T) {
	const secretBody = "SECRET-BODY-never-echo"
	manifest := []byte(`{"platform":"linux/amd64"}` + "\n")
	big := bytes.Repeat([]byte{'a'}, MaxMetadata+1)
	cases := []struct {
		name     string
		limit    int64
		handler  func(n int, w http.ResponseWriter, r *http.Request)
		want     []byte
		wantErr  []error
		requests int
	}{
		{
			name:     "ok",
			handler:  func(n int, w http.ResponseWriter, r *http.Request) { w.Write(manifest) },
			want:     manifest,
			requests: 1,
		},
		{
			name:     "exactly 1 MiB",
			handler:  func(n int, w http.ResponseWriter, r *http.Request) { w.Write(big[:MaxMetadata]) },
			want:     big[:MaxMetadata],
			requests: 1,
		},
		{
			name: "redirect refused",
			handler: func(n int, w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/elsewhere", http.StatusFound)
			},
			wantErr:  []error{ErrTransfer, ErrRedirect},
			requests: 1,
		},
		{
			name:     "over 1 MiB with Content-Length refused",
			handler:  func(n int, w http.ResponseWriter, r *http.Request) { w.Write(big) },
			wantErr:  []error{ErrTransfer, ErrTooLarge},
			requests: 1,
		},
		{
			name: "over 1 MiB chunked refused",
			handler: func(n int, w http.ResponseWriter, r *http.Request) {
				w.Write(big[:1000])
				w.(http.Flusher).Flush()
				w.Write(big[1000:])
			},
			wantErr:  []error{ErrTransfer, ErrTooLarge},
			requests: 1,
		},
		{
			name:     "over a smaller limit refused",
			limit:    16,
			handler:  func(n int, w http.ResponseWriter, r *http.Request) { w.Write(manifest) },
			wantErr:  []error{ErrTooLarge},
			requests: 1,
		},
		{
			name: "500 retried then ok",
			handler: func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					http.Error(w, secretBody, 500)
					return
				}
				w.Write(manifest)
			},
			want:     manifest,
			requests: 2,
		},
		{
			name: "incomplete read retried",
			handler: func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					w.Header().Set("Content-Length", strconv.Itoa(len(manifest)+50))
					w.Write(manifest)
					w.(http.Flusher).Flush()
					if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
						c.Close()
					}
					return
				}
				w.Write(manifest)
			},
			want:     manifest,
			requests: 2,
		},
		{
			name:     "503 three times fails",
			handler:  func(n int, w http.ResponseWriter, r *http.Request) { http.Error(w, secretBody, 503) },
			wantErr:  []error{ErrTransfer, ErrHTTPStatus},
			requests: 3,
		},
		{
			name:     "404 fails at once",
			handler:  func(n int, w http.ResponseWriter, r *http.Request) { http.Error(w, secretBody, 404) },
			wantErr:  []error{ErrTransfer, ErrHTTPStatus},
			requests: 1,
		},
		{
			name:     "401 fails at once",
			handler:  func(n int, w http.ResponseWriter, r *http.Request) { http.Error(w, secretBody, 401) },
			wantErr:  []error{ErrTransfer, ErrHTTPStatus},
			requests: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var rec recorder
			srv := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tc.handler(rec.add(r), w, r)
			}))
			c := newTestClient(t, testOptions(srv))
			got, err := c.FetchMetadata(context.Background(), srv.URL+"/node-install/manifest.json?x=1", tc.limit)
			for _, want := range tc.wantErr {
				if !errors.Is(err, want) {
					t.Fatalf("error %v does not match %v", err, want)
				}
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, tc.want) {
					t.Fatalf("got %d bytes, want %d", len(got), len(tc.want))
				}
			}
			if err != nil {
				msg := err.Error()
				if strings.Contains(msg, secretBody) {
					t.Fatalf("error echoes the body: %v", err)
				}
				if !strings.Contains(msg, "manifest.json") || strings.Contains(msg, "x=1") {
					t.Fatalf("error does not name the file without its query: %v", err)
				}
				var se *StatusError
				if errors.As(err, &se) && !strings.Contains(msg, "HTTP "+strconv.Itoa(se.Code)) {
					t.Fatalf("error does not name the status: %v", err)
				}
			}
			if n := len(rec.all()); n != tc.requests {
				t.Fatalf("server saw %d requests, want %d", n, tc.requests)
			}
		})
	}
}

func TestFetchMetadataTransportErrorRetried(t *testing.T) {
	srv := tlsServer(t, http.NotFoundHandler())
	url := srv.URL
	c := newTestClient(t, testOptions(srv))
	srv.Close() // nothing listens any more
	_, err := c.FetchMetadata(context.Background(), url+"/node-install/SHA256SUMS", 0)
	if !errors.Is(err, ErrTransfer) || errors.Is(err, ErrHTTPStatus) {
		t.Fatalf("error %v, want a transfer error", err)
	}
}

func TestFetchMetadataUntrustedCertificateNotRetried(t *testing.T) {
	var rec recorder
	srv := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rec.add(r) }))
	o := testOptions(srv)
	o.RootCAs = nil // system roots do not know the test certificate
	o.RetrySleeps = []time.Duration{time.Minute}
	c := newTestClient(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := c.FetchMetadata(ctx, srv.URL+"/node-install/manifest.json", 0)
	if !errors.Is(err, ErrTransfer) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want a transfer error without retries", err)
	}
	if n := len(rec.all()); n != 0 {
		t.Fatalf("server saw %d requests", n)
	}
}

func TestCertPoolFromPEM(t *testing.T) {
	if _, err := CertPoolFromPEM([]byte("not a certificate")); err == nil {
		t.Fatal("accepted text without a certificate")
	}
}
