package privsep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/openagentcore/oac-node-install/steps/record/proxy"
)

// DefaultGrace is how long an interrupted child's process group has to stop
// after SIGTERM before it is killed: short, so that an interrupt ends the
// run within a second however the child behaves. Killing is safe at any
// point: every side effect a child's step makes is journalled before and
// after (fsynced), and the crash tests kill the child (SIGKILL) at every
// such point and check that the rerun ends as the uninterrupted run.
const DefaultGrace = 500 * time.Millisecond

// drainDelay bounds how long Run waits, after the child's process group is
// gone, for the pipes to reach end of file. Only a process that left the
// group (a daemon of its own) can hold them open longer.
const drainDelay = 2 * time.Second

// Options describe one child run.
type Options struct {
	// Binary is the installer's captured executable; the child runs it.
	Binary *Binary
	// UID, GID and Groups are the service account's user, primary group
	// and supplementary groups. UID and GID must not be 0.
	UID, GID int
	Groups   []int
	// Home is the account's home: the child's HOME and working directory
	// (/ while the home does not exist).
	Home string
	// Role names the Handler the child runs.
	Role string
	// Request is marshalled to JSON and handed to the handler through a
	// pipe, never in arguments or the environment (it may hold a token).
	Request any
	// Proxy is the parent's proxy variables, taken at start
	// (proxy.FromEnviron(os.Environ())); the child gets them normalized.
	Proxy proxy.Env
	// Output receives the child's stdout and stderr, sanitized (Writer).
	// Nil discards them, and so does an Output whose writes fail, so that
	// the child never blocks on a full pipe.
	Output io.Writer
	// Progress, if set, receives the child's progress events in order,
	// their text sanitized. It is called from a goroutine of Run and must
	// not block for long.
	Progress func(Event)
	// Signals, if set, replaces Run's own handling of SIGINT, SIGHUP and
	// SIGTERM: any value received interrupts the child. Nil makes Run
	// listen itself, while the child runs, for those of the three the
	// process does not ignore (InterruptSignals).
	Signals <-chan os.Signal
	// Grace overrides DefaultGrace.
	Grace time.Duration
	// NoColor gives the child NO_COLOR=1 (the command's --no-color or
	// NO_COLOR), so that nothing it runs colours its output.
	NoColor bool
}

// EventKind tells a phase from a progress line.
type EventKind string

// Event kinds.
const (
	// EventPhase starts a phase, printed as "==> <text>...".
	EventPhase EventKind = "phase"
	// EventLine is one progress line.
	EventLine EventKind = "line"
	// EventTransfer is a transfer's progress: Text names the file, Done
	// of Total bytes are held (0 <= Done <= Total, Total > 0).
	EventTransfer EventKind = "progress"
)

// Event is one progress report of the child.
type Event struct {
	Kind        EventKind
	Text        string
	Done, Total int64
}

// Result is what a child's handler returned, as JSON.
type Result struct {
	Value json.RawMessage
}

// Decode unmarshals the result into v.
func (r Result) Decode(v any) error {
	if err := json.Unmarshal(r.Value, v); err != nil {
		return fmt.Errorf("decode the result of the service-account process: %w", err)
	}
	return nil
}

// env is the child's environment: ChildEnv, and NO_COLOR=1 with NoColor.
func (o *Options) env() []string {
	env := ChildEnv(o.Home, o.Proxy)
	if o.NoColor {
		env = append(env, "NO_COLOR=1")
	}
	return env
}

// validate checks the options that Run cannot start without.
func (o *Options) validate() error {
	switch {
	case o.Binary == nil:
		return errors.New("run as the service account: no captured binary")
	case o.Role == "":
		return errors.New("run as the service account: no role")
	case o.UID <= 0 || o.GID <= 0:
		return fmt.Errorf("run %s as uid %d gid %d: %w", o.Role, o.UID, o.GID, ErrRoot)
	case !filepath.IsAbs(o.Home):
		return fmt.Errorf("run %s: home %q is not an absolute path", o.Role, o.Home)
	}
	for _, g := range o.Groups {
		if g < 0 || g > 1<<32-1 {
			return fmt.Errorf("run %s: supplementary group %d out of range", o.Role, g)
		}
	}
	return nil
}

// Run starts the child for o.Role as the service account and waits for it.
// The child is executed from the sealed copy o.Binary, with argv
// [oac-node-install, ChildCommand, role], the environment ChildEnv, stdin
// /dev/null, its own session and process group, and SIGKILL as its parent
// death signal. Its stdout and stderr reach o.Output through the
// terminal-control sanitizer; its structured messages reach o.Progress and
// the returned Result.
//
// Run returns the handler's result; a *ChildError when the handler failed
// (its Class tells transfer, refused and internal apart); an error wrapping
// ErrNoResult or ErrProtocol when the child misbehaved; and an error
// wrapping ErrInterrupted when ctx ended or SIGINT, SIGHUP or SIGTERM
// arrived: the child's process group then got SIGTERM and, after the grace
// period, SIGKILL. When Run returns, no process of the child's process group
// is left running.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.validate(); err != nil {
		return Result{}, err
	}
	envelopeData, err := o.envelope(o.Request, false)
	if err != nil {
		return Result{}, err
	}
	if ctx.Err() != nil {
		return Result{}, fmt.Errorf("%s as %s: %w", o.Role, AccountName, ErrInterrupted)
	}
	sigs, stopSignals := o.signals()
	defer stopSignals()

	rd := &reader{role: o.Role, progress: o.Progress}
	c, err := spawn(o, rd)
	if err != nil {
		return Result{}, err
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.p.reqW.Write(envelopeData) // a child that died early shows in its result
		c.p.reqW.Close()
	}()

	interrupted := false
	select {
	case <-c.exited:
	default:
		select {
		case <-c.exited:
		case <-ctx.Done():
			interrupted = true
		case <-sigs:
			interrupted = true
		}
	}
	state := c.finish(interrupted)
	if interrupted {
		return Result{}, fmt.Errorf("%s as %s: %w", o.Role, AccountName, ErrInterrupted)
	}
	return rd.outcome(state)
}

// envelope encodes what the child reads first: the credentials it must
// run with and, for one request, the request; a session's requests follow
// it one per line. It ends with a newline.
func (o *Options) envelope(request any, session bool) ([]byte, error) {
	var raw json.RawMessage
	if !session {
		var err error
		if raw, err = json.Marshal(request); err != nil {
			return nil, fmt.Errorf("encode the %s request: %w", o.Role, err)
		}
		// The envelope's fields besides the request are a few hundred bytes.
		if len(raw) > maxRequest-4096 {
			return nil, fmt.Errorf("the %s request exceeds %d bytes", o.Role, maxRequest)
		}
	}
	data, err := json.Marshal(envelope{UID: o.UID, GID: o.GID, Groups: append([]int{}, o.Groups...), Session: session, Request: raw})
	if err != nil {
		return nil, fmt.Errorf("encode the %s envelope: %w", o.Role, err)
	}
	return append(data, '\n'), nil
}

// signals is where interrupts come from while a child runs: o.Signals, or
// the process's own SIGINT, SIGHUP and SIGTERM until stop is called.
func (o *Options) signals() (sigs <-chan os.Signal, stop func()) {
	if o.Signals != nil {
		return o.Signals, func() {}
	}
	ch := make(chan os.Signal, 1)
	s := InterruptSignals()
	if len(s) == 0 {
		return ch, func() {}
	}
	signal.Notify(ch, s...)
	return ch, func() { signal.Stop(ch) }
}

// grace is how long an interrupted child's group has to stop.
func (o *Options) grace() time.Duration {
	if o.Grace > 0 {
		return o.Grace
	}
	return DefaultGrace
}
