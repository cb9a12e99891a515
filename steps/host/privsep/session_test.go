package privsep

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func startSession(t *testing.T, o Options) *Session {
	t.Helper()
	s, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSessionServesRequestsInOneChild(t *testing.T) {
	needRoot(t)
	s := startSession(t, baseOptions(t, "inspect"))
	var first, second inspection
	for _, in := range []*inspection{&first, &second} {
		res, err := s.Call(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := res.Decode(in); err != nil {
			t.Fatal(err)
		}
	}
	if first.PID != second.PID || first.PID == 0 {
		t.Errorf("the requests ran in processes %d and %d, want one", first.PID, second.PID)
	}
	if second.UID != nobody || second.EUID != nobody || second.GID != nogroup || second.Dumpable != 0 {
		t.Errorf("the session's child runs as %+v, want nobody, not dumpable", second)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if live := liveGroupMembers(first.PID); len(live) > 0 {
		t.Errorf("process group %d still has %v after Close", first.PID, live)
	}
	if _, err := s.Call(context.Background(), nil); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("Call after Close: %v, want ErrSessionEnded", err)
	}
}

func TestSessionAnswersEachRequest(t *testing.T) {
	needRoot(t)
	o := baseOptions(t, "echo")
	var mu sync.Mutex
	var events []Event
	o.Progress = func(e Event) { mu.Lock(); events = append(events, e); mu.Unlock() }
	s := startSession(t, o)
	defer s.Close()
	for i := range 3 {
		req := echoRequest{Stdout: []byte("call " + strconv.Itoa(i)), Lines: []string{"line " + strconv.Itoa(i)}}
		res, err := s.Call(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		var back echoRequest
		if err := res.Decode(&back); err != nil || string(back.Stdout) != string(req.Stdout) {
			t.Fatalf("call %d answered %q (%v)", i, back.Stdout, err)
		}
		mu.Lock()
		got := events[len(events)-1]
		mu.Unlock()
		if got.Text != req.Lines[0] {
			t.Errorf("call %d: last progress %q, want %q", i, got.Text, req.Lines[0])
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestSessionKeepsServingAfterAHandlerError(t *testing.T) {
	needRoot(t)
	s := startSession(t, baseOptions(t, "fail"))
	defer s.Close()
	for _, tc := range []failRequest{{ClassRefused, "first"}, {ClassTransfer, "second"}} {
		_, err := s.Call(context.Background(), tc)
		var ce *ChildError
		if !errors.As(err, &ce) || ce.Class() != tc.Class || ce.Message != "wrapped: "+tc.Message {
			t.Fatalf("error %v, want the child's %s error %q", err, tc.Class, tc.Message)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestSessionEndsWithItsChild(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		role   string
		wantIs error
	}{
		{"exit", ErrNoResult},
		{"garbage", ErrProtocol},
	} {
		t.Run(tc.role, func(t *testing.T) {
			s := startSession(t, baseOptions(t, tc.role))
			if _, err := s.Call(context.Background(), nil); !errors.Is(err, tc.wantIs) {
				t.Fatalf("error %v, want %v", err, tc.wantIs)
			}
			if _, err := s.Call(context.Background(), nil); !errors.Is(err, ErrSessionEnded) {
				t.Errorf("second call: %v, want ErrSessionEnded", err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close after the session ended: %v", err)
			}
		})
	}
}

func TestSessionInterrupted(t *testing.T) {
	needRoot(t)
	o := baseOptions(t, "sleep")
	o.Grace = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var pids []int
	o.Progress = func(e Event) {
		pid, _ := strconv.Atoi(e.Text)
		mu.Lock()
		defer mu.Unlock()
		if pids = append(pids, pid); len(pids) == 2 {
			cancel()
		}
	}
	s := startSession(t, o)
	defer s.Close()
	if _, err := s.Call(ctx, sleepRequest{}); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("error %v, want ErrInterrupted", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pids) != 2 {
		t.Fatalf("child reported pids %v", pids)
	}
	if live := liveGroupMembers(pids[0]); len(live) > 0 {
		t.Errorf("process group %d still has %v", pids[0], live)
	}
	if _, err := s.Call(context.Background(), sleepRequest{}); !errors.Is(err, ErrSessionEnded) {
		t.Errorf("call after the interrupt: %v, want ErrSessionEnded", err)
	}
}

// A child the service account stops (SIGSTOP) does not hold the run for
// ever: once it has stayed stopped for stoppedLimit, the call ends with
// ErrStopped, naming the account's processes, and no process of the
// child's group is left.
func TestSessionEndsAStoppedChild(t *testing.T) {
	needRoot(t)
	defer func(d time.Duration) { stoppedLimit = d }(stoppedLimit)
	stoppedLimit = 500 * time.Millisecond
	o := baseOptions(t, "sleep")
	o.Grace = 300 * time.Millisecond
	var mu sync.Mutex
	var pids []int
	o.Progress = func(e Event) {
		pid, _ := strconv.Atoi(e.Text)
		mu.Lock()
		defer mu.Unlock()
		if pids = append(pids, pid); len(pids) == 1 {
			syscall.Kill(pid, syscall.SIGSTOP)
		}
	}
	s := startSession(t, o)
	defer s.Close()
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), sleepRequest{})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrStopped) || !strings.Contains(err.Error(), "ps -u "+AccountName) {
			t.Fatalf("error %v, want ErrStopped naming the account's processes", err)
		}
	case <-time.After(15 * time.Second):
		mu.Lock()
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		mu.Unlock()
		t.Fatal("the call still waits for a stopped child after 15 s")
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("the call ended after %s", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if live := liveGroupMembers(pids[0]); len(live) > 0 {
		t.Errorf("process group %d still has %v", pids[0], live)
	}
}
