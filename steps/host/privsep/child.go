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
	"os/signal"
	"runtime"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// Handler runs one role in the child, as the service account, with umask
// 077, a new session keyring, its own session, stdin /dev/null and the fixed
// environment (ChildEnv). ctx ends when the parent stops the child (SIGTERM
// from the parent's interrupt handling): a handler stops promptly and leaves
// what a rerun can resume. The result must marshal to JSON; an error is
// reported with its class (ClassOf).
type Handler func(ctx context.Context, c *Child) (result any, err error)

// Child is a handler's view of the running child: its request, and the
// reporter that sends progress to the parent. Its methods are safe for
// concurrent use.
type Child struct {
	// Role is the role the parent asked for.
	Role string
	// Request is the parent's Options.Request as JSON.
	Request json.RawMessage

	out *sender
}

// Decode unmarshals the request into v, refusing unknown fields: parent
// and child are the same binary, so a mismatch is a bug.
func (c *Child) Decode(v any) error {
	dec := json.NewDecoder(bytes.NewReader(c.Request))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode the %s request: %w", c.Role, err)
	}
	return nil
}

// Phase reports the start of a phase; the parent shows it as "==> label...".
func (c *Child) Phase(label string) error {
	return c.out.send(message{Type: msgPhase, Text: clip(label)})
}

// Progress reports one progress line (for example "downloading runtime.tar.gz:
// 40%").
func (c *Child) Progress(line string) error {
	return c.out.send(message{Type: msgLine, Text: clip(line)})
}

// Transfer reports a transfer's progress: done of total bytes of the file
// named name. The parent renders it (in place on a terminal, in steps
// otherwise); the child should send it only when it changed enough to show.
func (c *Child) Transfer(name string, done, total int64) error {
	return c.out.send(message{Type: msgProgress, Text: clip(name), Done: done, Total: total})
}

// Executable maps the bytes the child is running, the parent's sealed copy
// inherited on a descriptor and checked to be the running executable's
// inode, for the service account to write its own retained copy of the
// installer. The caller closes the Binary.
func (c *Child) Executable() (*Binary, error) {
	return inheritedBinary()
}

// sender writes messages to the result pipe, one line each.
type sender struct {
	mu sync.Mutex
	f  *os.File
}

func (s *sender) send(m message) error {
	line, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s message: %w", m.Type, err)
	}
	line = append(line, '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.f.Write(line); err != nil {
		return fmt.Errorf("send %s message to the installer: %w", m.Type, err)
	}
	return nil
}

// sendResult sends the result message. data is json.Marshal's output, so
// compact and valid: the line is assembled around it rather than encoded
// again (a large result, such as an inspection of 1,000 generations, would
// otherwise be scanned once more).
func (s *sender) sendResult(data []byte) error {
	line := make([]byte, 0, len(resultPrefix)+len(data)+2)
	line = append(line, resultPrefix...)
	line = append(line, data...)
	line = append(line, '}', '\n')
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.f.Write(line); err != nil {
		return fmt.Errorf("send %s message to the installer: %w", msgResult, err)
	}
	return nil
}

// fail sends err as the final error message and returns the exit status.
func (s *sender) fail(err error) int {
	s.send(message{Type: msgError, Class: ClassOf(err), Text: clip(err.Error())})
	return 1
}

// clip bounds a text sent to the parent.
func clip(s string) string {
	if len(s) > maxText {
		return s[:maxText]
	}
	return s
}

// ServeChild serves a child invocation and exits the process; it returns
// false at once, doing nothing, when args (os.Args[1:]) is not one. main
// calls it first thing, before parsing flags, with every role the
// installer's parent side starts.
//
// The child sets umask 077, refuses to run as root, hardens itself (not
// dumpable; it checks that it started with no new privileges and a session
// keyring of its own, which the parent's forking thread gave it), reads the
// parent's envelope, checks it runs as exactly the user, group and
// supplementary groups the parent asked for, and calls the role's handler.
func ServeChild(args []string, roles map[string]Handler) (handled bool) {
	if len(args) == 0 || args[0] != ChildCommand {
		return false
	}
	os.Exit(serveChild(args[1:], roles))
	return true
}

// serveChild runs a child stage and returns its exit status: 0 after a
// result, 1 after an error was reported, 2 when not started by the parent.
func serveChild(args []string, roles map[string]Handler) int {
	unix.Umask(0o077)
	if !isPipe(resultFD) || !isPipe(requestFD) {
		fmt.Fprintf(os.Stderr, "oac-node-install: %s is internal; only the installer itself starts it\n", ChildCommand)
		return 2
	}
	out := &sender{f: os.NewFile(resultFD, "result pipe")}
	if len(args) != 1 {
		return out.fail(fmt.Errorf("child arguments %q: %w", args, ErrUnknownRole))
	}
	role := args[0]
	if err := refuseRoot(); err != nil {
		return out.fail(err)
	}
	if err := harden(); err != nil {
		return out.fail(err)
	}
	// Processes the handler starts must not hold the result pipe (the
	// parent reads it to end of file), nor the executable, nor the
	// request pipe a session reads on.
	unix.CloseOnExec(resultFD)
	unix.CloseOnExec(binaryFD)
	unix.CloseOnExec(requestFD)
	// Non-blocking, so that the runtime's poller reads it and closing it
	// ends a read: a session's child waiting for its next request leaves
	// when the parent stops it.
	if err := unix.SetNonblock(requestFD, true); err != nil {
		return out.fail(fmt.Errorf("the request pipe: %w", err))
	}
	reqFile := os.NewFile(requestFD, "request pipe")
	requests := bufio.NewReaderSize(reqFile, 64<<10)
	env, err := readEnvelope(requests)
	if err != nil {
		return out.fail(err)
	}
	if err := checkCredentials(env); err != nil {
		return out.fail(err)
	}
	h, ok := roles[role]
	if !ok {
		return out.fail(fmt.Errorf("role %q: %w", role, ErrUnknownRole))
	}
	// The parent stops the child with SIGTERM; SIGINT and SIGHUP come from
	// the terminal or its hangup, unless ignored (nohup), which the child
	// inherits and keeps.
	ctx, stop := context.Background(), func() {}
	if s := InterruptSignals(); len(s) > 0 {
		ctx, stop = signal.NotifyContext(ctx, s...)
	}
	defer stop()
	if !env.Session {
		return serveRequest(ctx, h, &Child{Role: role, Request: env.Request, out: out})
	}
	context.AfterFunc(ctx, func() { reqFile.Close() })
	for {
		req, err := readLine(requests, "a request")
		switch {
		case errors.Is(err, io.EOF):
			return 0
		case ctx.Err() != nil:
			return 1 // stopped by the parent between requests
		case err != nil:
			return out.fail(err)
		}
		if status := serveRequest(ctx, h, &Child{Role: role, Request: req, out: out}); status != 0 && ctx.Err() != nil {
			return status
		}
	}
}

// serveRequest runs the handler for one request and sends its result or
// error; it returns the exit status a child of one request ends with.
func serveRequest(ctx context.Context, h Handler, c *Child) int {
	result, err := callHandler(ctx, h, c)
	if err != nil {
		return c.out.fail(err)
	}
	data, err := json.Marshal(result)
	if err != nil {
		return c.out.fail(fmt.Errorf("encode the %s result: %w", c.Role, err))
	}
	if err := c.out.sendResult(data); err != nil {
		return 1
	}
	return 0
}

// callHandler runs h, turning a panic into an internal error so that the
// parent learns what happened instead of only that the child died.
func callHandler(ctx context.Context, h Handler, c *Child) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			buf := make([]byte, 16<<10)
			buf = buf[:runtime.Stack(buf, false)]
			os.Stderr.Write(buf)
			err = fmt.Errorf("%s handler panicked: %v", c.Role, p)
		}
	}()
	return h(ctx, c)
}

// isPipe reports whether fd is an open pipe.
func isPipe(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
}

// refuseRoot returns ErrRoot when any of the real or effective user or
// group ids is 0.
func refuseRoot() error {
	if os.Getuid() == 0 || os.Geteuid() == 0 || os.Getgid() == 0 || os.Getegid() == 0 {
		return fmt.Errorf("uid %d euid %d gid %d egid %d: %w", os.Getuid(), os.Geteuid(), os.Getgid(), os.Getegid(), ErrRoot)
	}
	return nil
}

// readEnvelope reads the envelope, the request pipe's first line.
func readEnvelope(r *bufio.Reader) (envelope, error) {
	data, err := readLine(r, "the request")
	if errors.Is(err, io.EOF) {
		err = fmt.Errorf("read the request from the installer: %w", io.ErrUnexpectedEOF)
	}
	if err != nil {
		return envelope{}, err
	}
	var env envelope
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return envelope{}, fmt.Errorf("decode the request from the installer: %w", err)
	}
	return env, nil
}

// readLine reads one line of at most maxRequest bytes from the request
// pipe, without its newline; io.EOF when the pipe ended before it began.
func readLine(r *bufio.Reader, what string) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxRequest+1 {
			return nil, fmt.Errorf("%s from the installer exceeds %d bytes", what, maxRequest)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) == 0:
			return nil, io.EOF
		case errors.Is(err, io.EOF):
			return line, nil // the last line of a parent that sent no newline
		}
		return nil, fmt.Errorf("read %s from the installer: %w", what, err)
	}
}

// checkCredentials verifies that the child runs as exactly the account the
// parent asked for.
func checkCredentials(env envelope) error {
	if env.UID == 0 || env.GID == 0 {
		return fmt.Errorf("asked to run as uid %d gid %d: %w", env.UID, env.GID, ErrRoot)
	}
	uid, euid, gid, egid := os.Getuid(), os.Geteuid(), os.Getgid(), os.Getegid()
	if uid != env.UID || euid != env.UID || gid != env.GID || egid != env.GID {
		return fmt.Errorf("running as uid %d euid %d gid %d egid %d, expected uid and gid %d:%d", uid, euid, gid, egid, env.UID, env.GID)
	}
	groups, err := unix.Getgroups()
	if err != nil {
		return fmt.Errorf("read supplementary groups: %w", err)
	}
	if !sameSet(groups, env.Groups) {
		return fmt.Errorf("running with supplementary groups %v, expected %v", groups, env.Groups)
	}
	return nil
}

// sameSet reports whether a and b hold the same ids, ignoring order and
// repetition.
func sameSet(a, b []int) bool {
	a, b = slices.Compact(slices.Sorted(slices.Values(a))), slices.Compact(slices.Sorted(slices.Values(b)))
	return slices.Equal(a, b)
}
