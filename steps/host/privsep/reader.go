package privsep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// relayBuffer is the size of the relay's reads: a pipe's default capacity,
// so that a child writing fast is relayed in one read and one write per
// pipeful rather than in io.Copy's 32 KiB pieces (half the system calls).
const relayBuffer = 64 << 10

// relay copies a child's output stream through the sanitizer.
func relay(out io.Writer, r io.Reader) {
	s := NewWriter(out)
	// Through a plain reader: *os.File's WriteTo would copy in 32 KiB
	// pieces whatever the buffer.
	io.CopyBuffer(s, struct{ io.Reader }{r}, make([]byte, relayBuffer))
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
