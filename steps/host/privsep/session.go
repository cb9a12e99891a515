package privsep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Session is one child that serves a series of requests for one role, so
// that a workflow whose steps run as the service account one after another
// starts one process instead of one per step. Each Call is one request: the
// same messages, results, errors and interrupt handling as Run. The child
// keeps the credentials it was started with; a caller whose account or
// groups change starts a new session. A Session is for one goroutine at a
// time.
type Session struct {
	o     Options
	c     *child
	rd    *reader
	mu    sync.Mutex
	ended error // why no more calls are possible, once the child is gone
}

// ErrSessionEnded is returned by Call after Close, or after a call ended
// the session's child (an interrupt, a protocol error, a child that died).
var ErrSessionEnded = errors.New("the service-account process has ended")

// Start starts a session's child for o.Role as the service account, as Run
// starts a child (o.Request is not used). The caller must Close it.
func Start(ctx context.Context, o Options) (*Session, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	envelopeData, err := o.envelope(nil, true)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s as %s: %w", o.Role, AccountName, ErrInterrupted)
	}
	rd := &reader{role: o.Role, progress: o.Progress, finals: make(chan message, 1), done: make(chan struct{})}
	c, err := spawn(o, rd)
	if err != nil {
		return nil, err
	}
	s := &Session{o: o, c: c, rd: rd}
	// The envelope is a few hundred bytes: the pipe takes it at once.
	if _, err := c.p.reqW.Write(envelopeData); err != nil {
		c.finish(true)
		return nil, fmt.Errorf("start %s: send the envelope: %w", o.Role, err)
	}
	return s, nil
}

// Call sends request to the session's child and waits for its answer, as
// Run does for a child of one request. An interrupt (ctx, or SIGINT, SIGHUP
// or SIGTERM) stops the child and its process group and ends the session,
// and so does a child that ends or misbehaves; a handler's error (a
// *ChildError) leaves it serving.
func (s *Session) Call(ctx context.Context, request any) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended != nil {
		return Result{}, s.endedError()
	}
	data, err := json.Marshal(request)
	if err != nil {
		return Result{}, fmt.Errorf("encode the %s request: %w", s.o.Role, err)
	}
	if len(data) > maxRequest {
		return Result{}, fmt.Errorf("the %s request exceeds %d bytes", s.o.Role, maxRequest)
	}
	if ctx.Err() != nil {
		return Result{}, fmt.Errorf("%s as %s: %w", s.o.Role, AccountName, ErrInterrupted)
	}
	select {
	case <-s.rd.finals:
		s.end(true, ErrSessionEnded)
		return Result{}, fmt.Errorf("%s: an answer before its request: %w", s.o.Role, ErrProtocol)
	default:
	}
	sigs, stopSignals := s.o.signals()
	defer stopSignals()

	// A large request may fill the pipe before the child reads it: the
	// write must not keep Call from an interrupt or the child's end.
	written := make(chan error, 1)
	go func() {
		_, err := s.c.p.reqW.Write(append(data, '\n'))
		written <- err
	}()
	// The account can stop its own process (SIGSTOP): a child stopped for
	// stoppedLimit is ended, so that the run does not wait for ever
	// holding the host lock.
	tick := time.NewTicker(stoppedPoll)
	defer tick.Stop()
	var stoppedSince time.Time
	for {
		select {
		case <-tick.C:
			if !processStopped(s.c.pid) {
				stoppedSince = time.Time{}
				continue
			}
			if stoppedSince.IsZero() {
				stoppedSince = time.Now()
			}
			if time.Since(stoppedSince) < stoppedLimit {
				continue
			}
			s.end(true, ErrStopped)
			return Result{}, fmt.Errorf("%s as %s: the process %d %w for %s and was ended; a process of %s may have stopped it (see `ps -u %s -o pid,stat,args`): once none does, rerun the same command to continue",
				s.o.Role, AccountName, s.c.pid, ErrStopped, stoppedLimit, AccountName, AccountName)
		case m := <-s.rd.finals:
			<-written
			return answer(s.o.Role, m)
		case <-s.c.exited:
			// The child ended, perhaps right after its answer: read what it
			// sent before deciding.
			s.end(false, ErrSessionEnded)
			select {
			case m := <-s.rd.finals:
				return answer(s.o.Role, m)
			default:
			}
			if s.rd.protoErr != nil {
				return Result{}, s.rd.protoErr
			}
			return Result{}, fmt.Errorf("%s as %s (%s): %w", s.o.Role, AccountName, s.c.cmd.ProcessState, ErrNoResult)
		case <-s.rd.done:
			// The result pipe carried a malformed message, or ended: the
			// child is leaving, or stopped serving.
			stop := s.rd.protoErr != nil
			if !stop {
				select {
				case <-s.c.exited:
				case <-time.After(drainDelay):
					stop = true
				}
			}
			s.end(stop, ErrSessionEnded)
			if s.rd.protoErr != nil {
				return Result{}, s.rd.protoErr
			}
			return Result{}, fmt.Errorf("%s as %s: %w", s.o.Role, AccountName, ErrNoResult)
		case <-ctx.Done():
		case <-sigs:
		}
		break
	}
	s.end(true, ErrInterrupted)
	return Result{}, fmt.Errorf("%s as %s: %w", s.o.Role, AccountName, ErrInterrupted)
}

// stoppedLimit is how long a call lets its child stay stopped: status's
// deadline for its own child (status.DefaultTimeout), long enough for a
// debugger's or the kernel's short stop.
var stoppedLimit = 8 * time.Second

// stoppedPoll is how often a call looks at its child's state.
const stoppedPoll = 250 * time.Millisecond

// processStopped reports whether pid is stopped by a signal or traced
// (state T or t in /proc/pid/stat).
func processStopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'T' || b[i+2] == 't'
}

// endedError is Call's error once the session has ended: ErrSessionEnded,
// and why when a call ended it.
func (s *Session) endedError() error {
	if errors.Is(s.ended, ErrSessionEnded) {
		return fmt.Errorf("%s as %s: %w", s.o.Role, AccountName, ErrSessionEnded)
	}
	return fmt.Errorf("%s as %s: %w (%w)", s.o.Role, AccountName, ErrSessionEnded, s.ended)
}

// end finishes the child (stopping it first with stop) and records why the
// session ended.
func (s *Session) end(stop bool, why error) {
	if s.ended != nil {
		return
	}
	s.ended = why
	s.c.finish(stop)
}

// closeDelay bounds how long Close waits for the child to leave after the
// end of its requests before stopping it.
const closeDelay = 5 * time.Second

// Close ends the session: the child sees the end of its requests and
// exits; one that does not within a few seconds is stopped. No process of
// its group is left. Close reports a child that ended other than cleanly,
// unless a Call already reported why the session ended.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended != nil {
		return nil
	}
	s.c.p.reqW.Close()
	t := time.NewTimer(closeDelay)
	defer t.Stop()
	stop := false
	select {
	case <-s.c.exited:
	case <-t.C:
		stop = true
	}
	s.ended = ErrSessionEnded
	state := s.c.finish(stop)
	if s.rd.protoErr != nil {
		return s.rd.protoErr
	}
	if stop || state == nil || !state.Success() {
		return fmt.Errorf("%s as %s (%s at the end of its requests): %w", s.o.Role, AccountName, state, ErrNoResult)
	}
	return nil
}
