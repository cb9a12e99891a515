package docker

import (
	"context"
	"errors"
	"net"
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
