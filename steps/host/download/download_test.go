package download

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// serveContent serves data with ETag "v1", honouring Range and If-Range.
func serveContent(w http.ResponseWriter, r *http.Request, data []byte) {
	w.Header().Set("ETag", `"v1"`)
	http.ServeContent(w, r, "artifact", time.Unix(1700000000, 0), bytes.NewReader(data))
}

// dropAfter writes n bytes of a 200 response declaring len(data) bytes,
// then cuts the connection.
func dropAfter(w http.ResponseWriter, data []byte, n int) {
	w.Header().Set("ETag", `"v1"`)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	w.Write(data[:n])
	w.(http.Flusher).Flush()
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

type dlCase struct {
	name      string
	size      int                                                              // payload size, default 300 KiB
	part      func(data []byte) []byte                                         // part file before the call
	validator string                                                           // saved validator before the call
	target    func(data []byte) []byte                                         // target file before the call
	handler   func(data []byte, n int, w http.ResponseWriter, r *http.Request) // n counts requests from 1
	header    http.Header
	stall     time.Duration
	wantErr   []error // nil: success
	requests  int     // requests the server must see (-1: do not check)
	check     func(t *testing.T, st Stats, err error, reqs []seen, target string)
}

func TestDownloadMisbehavingServers(t *testing.T) {
	const secretBody = "SECRET-BODY-never-echo"
	cases := []dlCase{
		{
			name:     "complete download",
			handler:  func(d []byte, _ int, w http.ResponseWriter, r *http.Request) { serveContent(w, r, d) },
			requests: 1,
			check: func(t *testing.T, st Stats, err error, reqs []seen, target string) {
				if exists(PartPath(target)) || exists(ValidatorPath(target)) {
					t.Error("part or validator left after success")
				}
				if reqs[0].Header.Get("Range") != "" {
					t.Error("fresh download sent Range")
				}
			},
		},
		{
			name: "wrong size declared by Content-Length",
			handler: func(d []byte, _ int, w http.ResponseWriter, r *http.Request) {
				serveContent(w, r, d[:len(d)-10])
			},
			wantErr:  []error{ErrTransfer, ErrSize},
			requests: 1,
		},
		{
			name: "longer body without Content-Length",
			handler: func(d []byte, _ int, w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusOK)
				w.Write(d)
				w.Write([]byte("0123456789"))
			},
			wantErr:  []error{ErrTransfer, ErrSize},
			requests: 1,
			check: func(t *testing.T, st Stats, err error, reqs []seen, target string) {
				if exists(PartPath(target)) {
					t.Error("part kept after a size mismatch")
				}
			},
		},
		{
			name: "wrong hash",
			handler: func(d []byte, _ int, w http.ResponseWriter, r *http.Request) {
				bad := bytes.Clone(d)
				bad[len(bad)/2] ^= 1
				serveContent(w, r, bad)
			},
			wantErr:  []error{ErrTransfer, ErrChecksum},
			requests: 1,
			check: func(t *testing.T, st Stats, err error, reqs []seen, target string) {
				if exists(PartPath(target)) || exists(ValidatorPath(target)) {
					t.Error("part kept after a checksum mismatch")
				}
			},
		},
		{
			name:      "resume with Range and If-Range",
			part:      func(d []byte) []byte { return d[:1000] },
			validator: `"v1"`,
			handler:   func(d []byte, _ int, w http.ResponseWriter, r *http.Request) { serveContent(w, r, d) },
			requests:  1,
			check: func(t *testing.T, st Stats, err error, reqs []seen, target string) {
				if got := reqs[0].Header.Get("Range"); got != "bytes=1000-" {
					t.Errorf("Range %q", got)
				}
				if got := reqs[0].Header.Get("If-Range"); got != `"v1"` {
					t.Errorf("If-Range %q", got)
				}
				if st.Kept != 1000 || st.Received != 300<<10-1000 {
					t.Errorf("stats %+v: want only the missing bytes", st)
				}
			},
		},
		{
			name:      "200 to a Range request restarts with that body",
			part:      func(d []byte) []byte { return d[:1000] },
			validator: `"old"`,
			handler: func(d []byte, _ int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("ETag", `"v2"`)
				w.Write(d)
			},
			requests: 1,
			check: func(t *testing.T, st Stats, err error, reqs []seen, target string) {
				if st.Restarts != 1 || st.Received != 300<<10 {
					t.Errorf("stats %+v", st)
				}
			},
		},
		{
			name:      "stale part with a new file behind 200",
			part:      func(d []byte) []byte { return bytes.Repeat([]byte{'x'}, 2000) },
			validator: `"old"`,
			handler:   func(d []byte, _ int, w http.ResponseWriter, r *http.Request) { serveContent(w, r, d) },
			requests:  1,
		},
		{
			name:      "Content-Range starting elsewhere restarts",
			part:      func(d []byte) []byte { return d[:1000] },
			validator: `"v1"`,
			handler: func(d []byte, _ int, w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Range") != "" {
					w.Header().Set("Content-Range", fmt.Sprintf("bytes 500-%d/%d", len(d)-1, len(d)))
					w.WriteHeader(http.StatusPartialContent)
					w.Write(d[500:])
					return
				}
				serveContent(w, r, d)
			},
			requests: 2,
			check: func(t *testing.T, st Stats, err error, reqs []seen, target string) {
				if reqs[1].Header.Get("Range") != "" || reqs[1].Header.Get("If-Range") != "" {
					t.Error("restart still sent Range/If-Range")
				}
				if st.Restarts != 1 {
					t.Errorf("stats %+v", st)
				}
			},
		},
		{
			name:      "416 discards the part and restarts",
			part:      func(d []byte) []byte { return d[:1000] },
			validator: `"v1"`,
			handler: func(d []byte, _ int, w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Range") != "" {
					w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
					return
				}
				serveContent(w, r, d)
			},
			requests: 2,
		},
		{
			name: "206 declaring another total size",
			part: func(d []byte) []byte { return d[:1000] },
			handler: func(d []byte, _ int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Range", fmt.Sprintf("bytes 1000-%d/%d", len(d), len(d)+1))
				w.WriteHeader(http.StatusPartialContent)
				w.Write(d[1000:])
			},
			wantErr:  []error{ErrTransfer, ErrSize},
			requests: 1,
			check: func(t *testing.T, st Stats, err error, reqs []seen, target string) {
				if exists(PartPath(target)) {
					t.Error("part kept after a size mismatch")
				}
			},
		},
		{
			name:    "part without validator resumes with Range only",
			part:    func(d []byte) []byte { return d[:4096] },
			handler: func(d []byte, _ int, w http.ResponseWriter, r *http.Request) { serveContent(w, r, d) },
			check: func(t *testing.T, st Stats, err error, reqs []seen, target string) {
				if reqs[0].Header.Get("Range") != "bytes=4096-" || reqs[0].Header.Get("If-Range") != "" {
					t.Errorf("headers %v", reqs[0].Header)
				}
			},
			requests: 1,
		},
		{
			name:     "complete part left before the rename needs no request",
			part:     func(d []byte) []byte { return d },
			handler:  func(d []byte, _ int, w http.ResponseWriter, r *http.Request) { serveContent(w, r, d) },
			requests: 0,
		},
		{
			name:      "complete part with other bytes starts over",
			part:      func(d []byte) []byte { b := bytes.Clone(d); b[7] ^= 0xff; return b },
			validator: `"v1"`,
			handler:   func(d []byte, _ int, w http.ResponseWriter, r *http.Request) { serveContent(w, r, d) },
			requests:  1,
		},
		{
			name:     "part longer than the file starts over",
			part:     func(d []byte) []byte { return append(bytes.Clone(d), 'x') },
			handler:  func(d []byte, _ int, w http.ResponseWriter, r *http.Request) { serveContent(w, r, d) },
			requests: 1,
		},
		{
			name: "5xx retried then success",
			handler: func(d []byte, n int, w http.ResponseWriter, r *http.Request) {
				if n <= 2 {
					http.Error(w, secretBody, []int{503, 429}[n-1])
					return
				}
				serveContent(w, r, d)
			},
			requests: 3,
		},
		{
			name: "5xx three times fails",
			handler: func(d []byte, n int, w http.ResponseWriter, r *http.Request) {
				http.Error(w, secretBody, http.StatusBadGateway)
			},
			wantErr:  []error{ErrTransfer, ErrHTTPStatus},
			requests: 3,
			check: func(t *testing.T, st Stats, err error, reqs []seen, target string) {
				var se *StatusError
				if !errors.As(err, &se) || se.Code != 502 {
					t.Errorf("want StatusError 502, got %v", err)
				}
			},
		},
		{
			name: "404 fails at once without the body",
			handler: func(d []byte, n int, w http.ResponseWriter, r *http.Request) {
				http.Error(w, secretBody, http.StatusNotFound)
			},
			wantErr:  []error{ErrTransfer, ErrHTTPStatus},
			requests: 1,
			check: func(t *testing.T, st Stats, err error, reqs []seen, target string) {
				if !strings.Contains(err.Error(), "HTTP 404") || !strings.Contains(err.Error(), "runtime.tar.gz") {
					t.Errorf("message does not name the file and status: %v", err)
				}
			},
		},
		{
			// The platform's installer: an artifact answered 403 fails at
			// once, with no retry (item 7f of issue 26).
			name: "403 fails at once without retry",
			handler: func(d []byte, n int, w http.ResponseWriter, r *http.Request) {
				http.Error(w, secretBody, http.StatusForbidden)
			},
			wantErr:  []error{ErrTransfer, ErrHTTPStatus},
			requests: 1,
			check: func(t *testing.T, st Stats, err error, reqs []seen, target string) {
				var se *StatusError
				if !errors.As(err, &se) || se.Code != http.StatusForbidden || !strings.Contains(err.Error(), "HTTP 403") {
					t.Errorf("want StatusError 403 naming the status, got %v", err)
				}
			},
		},
		{
			name: "connection cut mid-stream resumes",
			size: 3 << 20,
			handler: func(d []byte, n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					dropAfter(w, d, len(d)/2)
					return
				}
				serveContent(w, r, d)
			},
			requests: 2,
			check: func(t *testing.T, st Stats, err error, reqs []seen, target string) {
				if rg := reqs[1].Header.Get("Range"); rg == "" || reqs[1].Header.Get("If-Range") != `"v1"` {
					t.Errorf("retry did not resume: %v", reqs[1].Header)
				}
				if st.Received != 3<<20 {
					t.Errorf("received %d bytes for a 3 MiB file", st.Received)
				}
			},
		},
		{
			name:  "stall keeps the part",
			stall: 300 * time.Millisecond,
			handler: func(d []byte, n int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(d)))
				w.WriteHeader(http.StatusOK)
				w.Write(d[:100<<10])
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			},
			wantErr:  []error{ErrTransfer, ErrStalled},
			requests: 1,
			check: func(t *testing.T, st Stats, err error, reqs []seen, target string) {
				if got := fileSize(PartPath(target)); got != 100<<10 {
					t.Errorf("part holds %d bytes, want the 100 KiB received", got)
				}
				if !strings.Contains(err.Error(), "rerun the same command") {
					t.Errorf("message does not say to rerun: %v", err)
				}
			},
		},
		{
			name:     "verified target is reused",
			target:   func(d []byte) []byte { return d },
			handler:  func(d []byte, _ int, w http.ResponseWriter, r *http.Request) { serveContent(w, r, d) },
			requests: 0,
			check: func(t *testing.T, st Stats, err error, reqs []seen, target string) {
				if !st.Reused {
					t.Error("not reported as reused")
				}
			},
		},
		{
			name:     "target with other bytes is refused and kept",
			target:   func(d []byte) []byte { return []byte("other") },
			handler:  func(d []byte, _ int, w http.ResponseWriter, r *http.Request) { serveContent(w, r, d) },
			wantErr:  []error{ErrTargetConflict},
			requests: 0,
			check: func(t *testing.T, st Stats, err error, reqs []seen, target string) {
				if errors.Is(err, ErrTransfer) {
					t.Error("a local conflict classified as a transfer error")
				}
				if b, _ := os.ReadFile(target); string(b) != "other" {
					t.Error("conflicting target changed")
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			size := tc.size
			if size == 0 {
				size = 300 << 10
			}
			data := payload(size, uint64(len(tc.name)))
			var rec recorder
			srv := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				tc.handler(data, rec.add(r), w, r)
			}))
			o := testOptions(srv)
			if tc.stall > 0 {
				o.StallWindow = tc.stall
			}
			c := newTestClient(t, o)
			target := targetIn(t)
			if tc.part != nil {
				writeFile(t, PartPath(target), tc.part(data))
			}
			if tc.validator != "" {
				writeFile(t, ValidatorPath(target), []byte(tc.validator+"\n"))
			}
			if tc.target != nil {
				writeFile(t, target, tc.target(data))
			}
			st, err := c.DownloadStats(context.Background(), Request{
				URL: srv.URL + "/artifacts/x", Target: target, Size: int64(size), SHA256: hexSum(data), Mode: 0o600, Header: tc.header,
			})
			if tc.wantErr == nil && err != nil {
				t.Fatalf("download: %v", err)
			}
			for _, want := range tc.wantErr {
				if !errors.Is(err, want) {
					t.Fatalf("error %v does not match %v", err, want)
				}
			}
			if err != nil && strings.Contains(err.Error(), secretBody) {
				t.Fatalf("error echoes the response body: %v", err)
			}
			if tc.wantErr == nil {
				if b, _ := os.ReadFile(target); !bytes.Equal(b, data) {
					t.Fatal("target missing after success")
				}
			}
			if tc.target == nil {
				assertTargetSafe(t, target, data, 0o600)
			}
			reqs := rec.all()
			if tc.requests >= 0 && len(reqs) != tc.requests {
				t.Fatalf("server saw %d requests, want %d", len(reqs), tc.requests)
			}
			if tc.check != nil {
				tc.check(t, st, err, reqs, target)
			}
		})
	}
}

func TestDownloadModeForExecutables(t *testing.T) {
	data := payload(4096, 7)
	srv := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serveContent(w, r, data) }))
	c := newTestClient(t, testOptions(srv))
	for _, mode := range []os.FileMode{0o700, 0o600} {
		t.Run(mode.String(), func(t *testing.T) {
			target := targetIn(t)
			if err := c.Download(context.Background(), Request{URL: srv.URL + "/a", Target: target, Size: 4096, SHA256: hexSum(data), Mode: mode}); err != nil {
				t.Fatal(err)
			}
			assertTargetSafe(t, target, data, mode)
			if !exists(target) {
				t.Fatal("no target")
			}
		})
	}
	t.Run("group bits refused", func(t *testing.T) {
		err := c.Download(context.Background(), Request{URL: srv.URL + "/a", Target: targetIn(t), Size: 4096, SHA256: hexSum(data), Mode: 0o640})
		if err == nil {
			t.Fatal("mode 0640 accepted")
		}
	})
}

func TestDownloadRedirects(t *testing.T) {
	data := payload(200<<10, 11)
	var recB recorder
	b := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		recB.add(r)
		serveContent(w, r, data)
	}))
	var plainHits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainHits.Add(1)
		serveContent(w, r, data)
	}))
	defer plain.Close()
	var recA recorder
	a := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		recA.add(r)
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "cookie-secret"})
		switch r.URL.Path {
		case "/https":
			http.Redirect(w, r, b.URL+"/release/file", http.StatusFound)
		case "/http":
			http.Redirect(w, r, plain.URL+"/release/file", http.StatusFound)
		case "/creds":
			u := strings.Replace(b.URL, "https://", "https://user:pw@", 1)
			http.Redirect(w, r, u+"/release/file", http.StatusTemporaryRedirect)
		}
	}))
	c := newTestClient(t, testOptions(a))
	header := http.Header{
		"Authorization": {"Bearer token-secret"},
		"Cookie":        {"session=cookie-secret"},
		"X-Custom":      {"custom"},
	}

	t.Run("https redirect carries only Range and If-Range", func(t *testing.T) {
		target := targetIn(t)
		writeFile(t, PartPath(target), data[:5000])
		writeFile(t, ValidatorPath(target), []byte(`"v1"`))
		if err := c.Download(context.Background(), Request{URL: a.URL + "/https", Target: target, Size: int64(len(data)), SHA256: hexSum(data), Mode: 0o600, Header: header}); err != nil {
			t.Fatal(err)
		}
		assertTargetSafe(t, target, data, 0o600)
		first := recA.all()[0].Header
		if first.Get("Authorization") == "" {
			t.Fatal("first hop did not get the caller's header")
		}
		got := recB.all()
		if len(got) != 1 {
			t.Fatalf("release host saw %d requests", len(got))
		}
		h := got[0].Header
		if h.Get("Range") != "bytes=5000-" || h.Get("If-Range") != `"v1"` {
			t.Errorf("Range/If-Range not carried: %v", h)
		}
		for _, k := range []string{"Authorization", "Cookie", "X-Custom", "Referer"} {
			if h.Get(k) != "" {
				t.Errorf("%s sent after a redirect", k)
			}
		}
		for k := range h {
			switch k {
			case "Range", "If-Range", "User-Agent", "Accept-Encoding":
			default:
				t.Errorf("header %s sent after a redirect", k)
			}
		}
	})
	for _, path := range []string{"/http", "/creds"} {
		t.Run("refused "+path, func(t *testing.T) {
			target := targetIn(t)
			before := len(recB.all())
			err := c.Download(context.Background(), Request{URL: a.URL + path, Target: target, Size: int64(len(data)), SHA256: hexSum(data), Mode: 0o600})
			if !errors.Is(err, ErrRedirect) || !errors.Is(err, ErrTransfer) {
				t.Fatalf("error %v, want a refused redirect", err)
			}
			if strings.Contains(err.Error(), "pw@") {
				t.Fatalf("credentials in message: %v", err)
			}
			if plainHits.Load() != 0 || len(recB.all()) != before {
				t.Fatal("refused redirect was followed")
			}
			assertTargetSafe(t, target, data, 0o600)
			if exists(target) {
				t.Fatal("target written")
			}
		})
	}
}

func TestDownloadCancelKeepsPart(t *testing.T) {
	data := payload(1<<20, 3)
	started := make(chan struct{})
	srv := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data[:200<<10])
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
	}))
	c := newTestClient(t, testOptions(srv))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; time.Sleep(100 * time.Millisecond); cancel() }()
	target := targetIn(t)
	err := c.Download(ctx, Request{URL: srv.URL, Target: target, Size: int64(len(data)), SHA256: hexSum(data), Mode: 0o600})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTransfer) {
		t.Fatalf("error %v, want cancellation that is not a transfer error", err)
	}
	if exists(target) || fileSize(PartPath(target)) != 200<<10 {
		t.Fatalf("want the 200 KiB part kept and no target, part has %d", fileSize(PartPath(target)))
	}
}

func TestDownloadProgress(t *testing.T) {
	data := payload(3<<20+5, 5)
	srv := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serveContent(w, r, data) }))
	c := newTestClient(t, testOptions(srv))
	var last, total int64
	calls := 0
	err := c.Download(context.Background(), Request{URL: srv.URL, Target: targetIn(t), Size: int64(len(data)), SHA256: hexSum(data), Mode: 0o600,
		Progress: func(d, tot int64) {
			if d < last {
				t.Errorf("progress went back from %d to %d", last, d)
			}
			last, total, calls = d, tot, calls+1
		}})
	if err != nil {
		t.Fatal(err)
	}
	if last != int64(len(data)) || total != int64(len(data)) || calls < 2 {
		t.Fatalf("progress ended at %d/%d after %d calls", last, total, calls)
	}
}

func TestParseContentRange(t *testing.T) {
	for _, tc := range []struct {
		in           string
		start, total int64
		ok           bool
	}{
		{"bytes 0-9/10", 0, 10, true},
		{"bytes 5-9/*", 5, -1, true},
		{"bytes 5-9/9", 0, 0, false},
		{"bytes 9-5/10", 0, 0, false},
		{"bytes */10", 0, 0, false},
		{"items 0-9/10", 0, 0, false},
		{"bytes -1-9/10", 0, 0, false},
		{"", 0, 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			s, tot, ok := parseContentRange(tc.in)
			if ok != tc.ok || (ok && (s != tc.start || tot != tc.total)) {
				t.Fatalf("got %d %d %v", s, tot, ok)
			}
		})
	}
}

// io is used by helpers in other test files; keep the import honest here.
var _ = io.EOF
