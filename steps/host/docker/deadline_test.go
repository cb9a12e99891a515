package docker

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An engine that accepts the connection and never answers fails each call
// at its deadline with ErrNoAnswer, naming the call; the caller's own
// cancellation stays context.Canceled.
func TestHungEngineCallsEndAtTheirDeadline(t *testing.T) {
	sock := engineSocket(t, func(conn net.Conn) {}) // read nothing, answer nothing
	old := CallTimeout
	CallTimeout = 200 * time.Millisecond
	t.Cleanup(func() { CallTimeout = old })
	c, err := New("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for name, call := range map[string]func(context.Context) error{
		"info":            func(ctx context.Context) error { _, err := c.Info(ctx); return err },
		"inspect image":   func(ctx context.Context) error { _, _, _, err := c.ImageInspect(ctx, "sha256:00"); return err },
		"inspect network": func(ctx context.Context) error { _, err := c.NetworkInspect(ctx, "oac-node-x"); return err },
	} {
		start := time.Now()
		err := call(context.Background())
		if !errors.Is(err, ErrNoAnswer) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want ErrNoAnswer naming the call", name, err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s took %s", name, d)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := c.Info(ctx); errors.Is(err, ErrNoAnswer) || !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled call: %v, want context.Canceled", err)
	}
}

// An engine that breaks off the connection without an answer fails the
// call once, naming it once, with the next step for the operator.
func TestBrokenOffAnswerNamesTheCallOnceAndTheNextStep(t *testing.T) {
	sock := engineSocket(t, func(conn net.Conn) {
		conn.Read(make([]byte, 4096)) // the request, then no answer at all
		conn.Close()
	})
	c, err := New("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _, _, err = c.ImageInspect(context.Background(), "sha256:00")
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if strings.Count(msg, "inspect image") != 1 || !strings.Contains(msg, "docker info") || !strings.Contains(msg, "rerun the same command") {
		t.Errorf("error %q: want the call named once and the next step", msg)
	}
}

// engineSocket is a Docker Engine socket that hands each connection to
// serve; connections serve leaves open are closed with the test.
func engineSocket(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, conn)
			serve(conn)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return sock
}

// An image load is watched by pings: an engine that takes longer than
// LoadStallTimeout over the load but answers its pings is waited for; one
// that answers no ping for LoadStallTimeout (stopped, hung) fails the load
// then with ErrNoAnswer naming the load and the next step, long before
// LoadTimeout.
func TestImageLoadWatchdog(t *testing.T) {
	old := LoadStallTimeout
	LoadStallTimeout = 400 * time.Millisecond
	t.Cleanup(func() { LoadStallTimeout = old })
	for _, tc := range []struct {
		name     string
		pings    bool
		noAnswer bool
	}{
		{"busy engine answering its pings", true, false},
		{"stopped engine", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			sock := filepath.Join(t.TempDir(), "docker.sock")
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case strings.HasSuffix(r.URL.Path, "/_ping"):
					if !tc.pings {
						select { // a stopped engine: no answer
						case <-release:
						case <-r.Context().Done():
						}
						return
					}
					w.Header().Set("Api-Version", "1.41")
					w.WriteHeader(http.StatusOK)
				case strings.HasSuffix(r.URL.Path, "/images/load"):
					io.Copy(io.Discard, r.Body)
					select { // four stall timeouts of work
					case <-time.After(4 * LoadStallTimeout):
					case <-r.Context().Done():
						return
					}
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{"stream":"Loaded image ID: sha256:00\n"}`+"\n")
				default:
					http.NotFound(w, r)
				}
			})}
			go srv.Serve(l)
			defer srv.Close()
			c, err := New("unix://" + sock)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			err = c.ImageLoadReader(context.Background(), strings.NewReader("archive"), "runtime.tar.gz")
			took := time.Since(start)
			switch {
			case !tc.noAnswer && err != nil:
				t.Fatalf("a busy engine's load failed after %s: %v", took, err)
			case tc.noAnswer && (!errors.Is(err, ErrNoAnswer) || !strings.Contains(err.Error(), "load image runtime.tar.gz") ||
				!strings.Contains(err.Error(), "rerun the same command")):
				t.Fatalf("a stopped engine's load: %v; want ErrNoAnswer naming the load and the next step", err)
			case tc.noAnswer && took > 4*LoadStallTimeout:
				t.Fatalf("a stopped engine's load failed after %s", took)
			}
			t.Logf("%s: %v after %s", tc.name, err, took.Round(10*time.Millisecond))
		})
	}
}
