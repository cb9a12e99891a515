package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/steps/record/bootstrap"
	"github.com/openagentcore/oac-node-install/workflow"
)

// maxTokenLine is the longest line read as a token: the token's 4096
// characters and a line end, with room to tell a longer one.
const maxTokenLine = bootstrap.MaxTokenLength + 2

// promptInterrupted is the failure of a token prompt a signal ended: the
// command had read no token and changed nothing.
type promptInterrupted struct{ cause error }

func (e *promptInterrupted) Error() string {
	return "interrupted at the enrollment token prompt; no token was read"
}
func (e *promptInterrupted) Unwrap() error { return e.cause }

// readToken reads the enrollment token: one line of standard input without
// its surrounding whitespace. A line longer than a token can be is refused
// whole. From a terminal it prompts on stderr without echo, and a signal
// that cancels ctx (Ctrl-C) ends the prompt at once: echo is restored, the
// line being typed is left unread, and the error is a *promptInterrupted
// that changed nothing.
func readToken(ctx context.Context, stdin io.Reader, stderr io.Writer) (string, error) {
	var (
		line []byte
		err  error
	)
	f, ok := stdin.(*os.File)
	restore, terr := func() (func(), error) {
		if !ok {
			return nil, errors.New("not a file")
		}
		return noEcho(int(f.Fd()))
	}()
	if terr == nil {
		tokenPrompt.open(stderr, "Enrollment token: ")
		line, err = readTerminalLine(ctx, int(f.Fd()))
		restore()
		tokenPrompt.end()
	} else {
		line, err = readLine(stdin)
	}
	if err != nil {
		return "", err
	}
	if len(line) > maxTokenLine {
		return "", usagef("--token-stdin the token is longer than %d characters", bootstrap.MaxTokenLength)
	}
	return strings.TrimSpace(string(line)), nil
}

// openLine is a prompt printed on the terminal whose line the answer (typed
// without echo) has not ended yet: the stopping message a signal prints
// ends it first, so that it starts a line of its own.
type openLine struct {
	mu sync.Mutex
	w  io.Writer // where the open prompt is; nil when none is
}

// tokenPrompt is the enrollment token's prompt, the only one.
var tokenPrompt openLine

// open prints prompt on w and leaves its line open.
func (l *openLine) open(w io.Writer, prompt string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	io.WriteString(w, prompt)
	l.w = w
}

// end ends the prompt's line, if it is still open.
func (l *openLine) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w != nil {
		io.WriteString(l.w, "\n")
		l.w = nil
	}
}

// readLine reads one line of r byte by byte, so that nothing after the line
// end is consumed, up to one byte more than maxTokenLine.
func readLine(r io.Reader) ([]byte, error) {
	var line []byte
	var b [1]byte
	for len(line) <= maxTokenLine {
		n, err := r.Read(b[:])
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			line = append(line, b[0])
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read the enrollment token from standard input: %w", err)
		}
	}
	return line, nil
}

// readTerminalLine reads one line from the terminal fd in canonical mode,
// where the terminal hands over a line only once it is complete. It waits
// in poll(2) on the terminal and on a pipe that ctx's end writes to, so a
// signal that cancels ctx ends the wait at once, with a *promptInterrupted,
// and the unfinished line stays in the terminal, never taken as a token.
func readTerminalLine(ctx context.Context, fd int) ([]byte, error) {
	var wake [2]int
	if err := unix.Pipe2(wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, fmt.Errorf("read the enrollment token: %w", err)
	}
	defer unix.Close(wake[0])
	defer unix.Close(wake[1])
	stop := context.AfterFunc(ctx, func() { unix.Write(wake[1], []byte{0}) })
	defer stop()
	var line []byte
	buf := make([]byte, maxTokenLine+1)
	for len(line) <= maxTokenLine {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(wake[0]), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return nil, fmt.Errorf("read the enrollment token: %w", err)
		}
		if fds[1].Revents != 0 || ctx.Err() != nil {
			return nil, &promptInterrupted{cause: context.Cause(ctx)}
		}
		if fds[0].Revents == 0 {
			continue
		}
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the enrollment token from the terminal: %w", err)
		}
		if n == 0 { // end of input (Ctrl-D on an empty line)
			break
		}
		line = append(line, buf[:n]...)
		if i := strings.IndexByte(string(line), '\n'); i >= 0 {
			return line[:i], nil
		}
	}
	return line, nil
}

// noEcho turns off the terminal's echo on fd, when fd is a terminal, and
// returns what restores it.
func noEcho(fd int) (func(), error) {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	saved := *t
	t.Lflag &^= unix.ECHO
	t.Lflag |= unix.ICANON | unix.ISIG
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
		return nil, err
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, &saved) }, nil
}

// tokenPromptMessage is the line an interrupted token prompt ends the
// command with (exit 128 + the signal's number, as any interruption).
var tokenPromptMessage = "Interrupted at the enrollment token prompt. " + workflow.NothingWasChanged
