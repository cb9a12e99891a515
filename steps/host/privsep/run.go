package privsep

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/steps/record/proxy"
)

// DefaultGrace is how long an interrupted child's process group has to stop
// after SIGTERM before it is killed.
const DefaultGrace = 5 * time.Second

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
	// Home is the account's home: the child's HOME and working directory.
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

// child is one started child process: its pipes, and the goroutines that
// relay its output and read its messages.
type child struct {
	role   string
	cmd    *exec.Cmd
	pid    int
	p      *pipes
	exited chan struct{}
	grace  time.Duration
	// wg counts the relays, the message reader and the request writer.
	wg sync.WaitGroup
}

// spawn starts the child for o (validated) and the goroutines that relay
// its stdout and stderr to o.Output and feed its messages to rd. The
// caller writes the envelope and ends with finish.
func spawn(o Options, rd *reader) (_ *child, err error) {
	p, err := openPipes(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Role, err)
	}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	execFD, err := p.execFD(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Role, err)
	}
	defer unix.Close(execFD)

	cred := &syscall.Credential{Uid: uint32(o.UID), Gid: uint32(o.GID), Groups: make([]uint32, 0, len(o.Groups))}
	for _, g := range o.Groups {
		cred.Groups = append(cred.Groups, uint32(g))
	}
	cmd := &exec.Cmd{
		// The sealed copy, named through this process's descriptor table:
		// the forked child resolves /proc/self/fd/N before execve closes N.
		Path:       fmt.Sprintf("/proc/self/fd/%d", execFD),
		Args:       []string{memfdName, ChildCommand, o.Role},
		Env:        o.env(),
		Dir:        o.Home,
		Stdin:      p.devNull,
		Stdout:     p.outW,
		Stderr:     p.errW,
		ExtraFiles: []*os.File{p.resW, p.reqR, p.exe}, // fd 3, 4 and 5
		SysProcAttr: &syscall.SysProcAttr{
			Credential: cred,
			Setsid:     true,
			Pdeathsig:  syscall.SIGKILL,
		},
	}

	// The child is forked from a thread of its own (childThread): the
	// parent death signal is tied to the OS thread that forks, and that
	// thread also carries what the child must start with (a new session
	// keyring of the account's, no new privileges). The goroutine keeps
	// the thread locked until the child has exited and never unlocks it,
	// so the runtime ends the thread with the goroutine and no other
	// goroutine of root ever runs with those settings.
	started := make(chan error, 1)
	c := &child{role: o.Role, cmd: cmd, p: p, exited: make(chan struct{}), grace: o.grace()}
	go func() {
		runtime.LockOSThread()
		if err := prepareChildThread(o.UID, o.GID); err != nil {
			started <- err
			return
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waitExited(cmd.Process.Pid)
		close(c.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s as %s: %w", o.Role, AccountName, err)
	}
	c.pid = cmd.Process.Pid
	p.closeChildEnds()

	output := o.Output
	if output == nil {
		output = io.Discard
	}
	out := &lockedWriter{w: output}
	c.wg.Add(3)
	go func() { defer c.wg.Done(); relay(out, p.outR) }()
	go func() { defer c.wg.Done(); relay(out, p.errR) }()
	go func() { defer c.wg.Done(); rd.read(p.resR) }()
	return c, nil
}

// finish ends the child: with interrupted, SIGTERM to its group and, after
// the grace period, SIGKILL; then whatever is left of the group goes, the
// child is reaped and the pipes drained. It returns how the child ended;
// no process of the child's group is left running.
func (c *child) finish(interrupted bool) *os.ProcessState {
	if interrupted {
		stopGroup(c.pid, c.exited, c.grace)
	}
	// Whatever is left of the group goes too. The child is exited (or
	// killed) but not yet reaped, so its pid, the group's id, cannot name
	// another group.
	unix.Kill(-c.pid, unix.SIGKILL)
	c.cmd.Wait()
	waitGroupGone(c.pid)

	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainDelay):
		// A process outside the group still holds a pipe: stop reading.
		c.p.closeParentEnds()
		<-done
	}
	c.p.close()
	return c.cmd.ProcessState
}

// prepareChildThread is childThread; a test replaces it to start a child
// the way a careless parent would.
var prepareChildThread = childThread

// waitExited blocks until the child pid has exited, leaving it unreaped
// (WNOWAIT) so that its pid stays reserved while Run signals its group.
func waitExited(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// stopGroup sends SIGTERM to the child's process group, waits up to grace
// for the child to exit and the group to empty, then sends SIGKILL and
// waits for the child to exit.
func stopGroup(pid int, exited <-chan struct{}, grace time.Duration) {
	unix.Kill(-pid, unix.SIGTERM)
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	select {
	case <-exited:
		// The group may still hold processes the child started.
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for unix.Kill(-pid, 0) == nil {
			select {
			case <-tick.C:
			case <-deadline.C:
				unix.Kill(-pid, unix.SIGKILL)
				return
			}
		}
	case <-deadline.C:
		unix.Kill(-pid, unix.SIGKILL)
		<-exited
	}
}

// groupGoneDelay bounds how long Run waits for killed processes of the
// group to finish dying. A killed process runs no more code of its own, but
// leaves only once the kernel has scheduled its exit; and an orphan whose
// exit nobody reaps (a container whose init does not reap) never leaves.
const groupGoneDelay = time.Second

// waitGroupGone waits until no process is left in group pgid, or
// groupGoneDelay has passed. Called after the group leader was reaped:
// while any member is left, the kernel keeps the group's id from naming a
// new process, and signal 0 sends nothing to whatever it names.
func waitGroupGone(pgid int) {
	deadline := time.Now().Add(groupGoneDelay)
	for unix.Kill(-pgid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}

// relay copies a child's output stream through the sanitizer.
func relay(out io.Writer, r io.Reader) {
	s := NewWriter(out)
	io.Copy(s, r)
	s.Flush()
}

// lockedWriter serializes the writes of the two output relays. It never
// fails: when the terminal is gone the relays must still drain the pipes,
// or the child would block on its next write.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w.Write(p)
	return len(p), nil
}

// reader decodes the child's messages.
type reader struct {
	role     string
	progress func(Event)
	// finals, for a session, receives each request's final message; a
	// child of one request sends one, kept in final.
	finals chan message
	// done is closed when read returns.
	done chan struct{}

	final    *message
	protoErr error
}

// read consumes the result pipe to its end.
func (rd *reader) read(r io.Reader) {
	defer io.Copy(io.Discard, r) // never leave the child blocked on a write
	if rd.done != nil {
		// Before draining: a session's child stays until it is stopped.
		defer close(rd.done)
	}
	sc := bufio.NewScanner(r)
	// The buffer grows with the longest line, up to maxMessage: most
	// children send a few short lines, and a fresh megabyte per child
	// would cost more than the child round trip itself.
	sc.Buffer(make([]byte, 0, 4096), maxMessage)
	for sc.Scan() {
		if err := rd.handle(sc.Bytes()); err != nil {
			rd.protoErr = err
			return
		}
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		rd.protoErr = fmt.Errorf("%s: message longer than %d bytes: %w", rd.role, maxMessage, ErrProtocol)
	case err != nil && !errors.Is(err, os.ErrClosed):
		rd.protoErr = fmt.Errorf("read messages of %s: %w", rd.role, err)
	}
}

// handle processes one message line.
func (rd *reader) handle(line []byte) error {
	var m message
	if raw, ok := bytes.CutPrefix(line, []byte(resultPrefix)); ok && len(raw) > 1 && raw[len(raw)-1] == '}' && json.Valid(raw[:len(raw)-1]) {
		// The result line as the child assembles it: one pass to validate
		// the value instead of decoding the whole line.
		m = message{Type: msgResult, Result: bytes.Clone(raw[:len(raw)-1])}
	} else {
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return fmt.Errorf("%s: %w", rd.role, ErrProtocol)
		}
	}
	if rd.final != nil {
		return fmt.Errorf("%s: message after the final one: %w", rd.role, ErrProtocol)
	}
	switch m.Type {
	case msgPhase, msgLine:
		if rd.progress != nil {
			rd.progress(Event{Kind: EventKind(m.Type), Text: SanitizeString(clip(m.Text))})
		}
	case msgProgress:
		if m.Total <= 0 || m.Done < 0 || m.Done > m.Total {
			return fmt.Errorf("%s: progress of %d of %d bytes: %w", rd.role, m.Done, m.Total, ErrProtocol)
		}
		if rd.progress != nil {
			rd.progress(Event{Kind: EventTransfer, Text: SanitizeString(clip(m.Text)), Done: m.Done, Total: m.Total})
		}
	case msgResult, msgError:
		if m.Type == msgResult && len(m.Result) == 0 {
			return fmt.Errorf("%s: result without a value: %w", rd.role, ErrProtocol)
		}
		if rd.finals == nil {
			rd.final = &m
			return nil
		}
		select {
		case rd.finals <- m:
		default:
			return fmt.Errorf("%s: a final message nobody asked for: %w", rd.role, ErrProtocol)
		}
	default:
		return fmt.Errorf("%s: message type %q: %w", rd.role, SanitizeString(clip(m.Type)), ErrProtocol)
	}
	return nil
}

// outcome turns what the child sent, and how it ended, into Run's result.
func (rd *reader) outcome(state *os.ProcessState) (Result, error) {
	if rd.protoErr != nil {
		return Result{}, rd.protoErr
	}
	how := "ended"
	if state != nil {
		how = state.String()
	}
	switch {
	case rd.final == nil:
		return Result{}, fmt.Errorf("%s as %s (%s): %w", rd.role, AccountName, how, ErrNoResult)
	case rd.final.Type != msgError && (state == nil || !state.Success()):
		return Result{}, fmt.Errorf("%s as %s (%s after its result): %w", rd.role, AccountName, how, ErrNoResult)
	}
	return answer(rd.role, *rd.final)
}

// answer is Run's result for a final message.
func answer(role string, m message) (Result, error) {
	if m.Type == msgError {
		return Result{}, &ChildError{Role: role, Message: SanitizeString(clip(m.Text)), class: knownClass(m.Class)}
	}
	return Result{Value: m.Result}, nil
}
