package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A cancelled prompt (the signal that cancels the command's context) ends
// the read at once, with the line being typed unread and echo restored.
func TestTokenPromptEndsWhenCancelled(t *testing.T) {
	master, slave := openPTY(t)
	defer slave.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	var stderr syncBuffer
	type result struct {
		tok string
		err error
	}
	done := make(chan result, 1)
	go func() {
		tok, err := readToken(ctx, slave, &stderr)
		done <- result{tok, err}
	}()
	waitFor(t, &stderr, "Enrollment token: ")
	if echoOn(t, slave) {
		t.Fatal("the prompt reads with echo on")
	}
	master.WriteString("half-typed")
	cancel(&signalError{syscall.SIGINT})
	var r result
	select {
	case r = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the prompt did not end when its context was cancelled")
	}
	var pi *promptInterrupted
	if !errors.As(r.err, &pi) || r.tok != "" {
		t.Fatalf("readToken = %q, %v; want a *promptInterrupted", r.tok, r.err)
	}
	var se *signalError
	if !errors.As(r.err, &se) || se.sig != syscall.SIGINT {
		t.Errorf("the error does not carry the signal: %v", r.err)
	}
	if !echoOn(t, slave) {
		t.Error("echo is not restored after the prompt")
	}
	// The half-typed line is still the terminal's: a reader after the
	// prompt gets it with the rest of the line.
	master.WriteString("-rest\n")
	got, err := readToken(context.Background(), slave, &stderr)
	if err != nil || got != "half-typed-rest" {
		t.Errorf("the next read got %q, %v", got, err)
	}
}

// A line typed at the prompt is the token, read without echo.
func TestTokenPromptReadsALine(t *testing.T) {
	master, slave := openPTY(t)
	defer slave.Close()
	var stderr syncBuffer
	done := make(chan string, 1)
	go func() {
		tok, err := readToken(context.Background(), slave, &stderr)
		if err != nil {
			t.Error(err)
		}
		done <- tok
	}()
	waitFor(t, &stderr, "Enrollment token: ")
	master.WriteString("  tok-123  \n")
	select {
	case got := <-done:
		if got != "tok-123" {
			t.Errorf("token %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no token read")
	}
}

// TestTokenPromptChild runs the command's `command --token-stdin`, whose
// first act is the token prompt, for TestCtrlCAtTheTokenPrompt.
func TestTokenPromptChild(t *testing.T) {
	if os.Getenv("OAC_TOKEN_PROMPT_CHILD") == "" {
		t.Skip("runs only as the token prompt test's child process")
	}
	c := &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	os.Exit(c.run([]string{"command", "--token-stdin", "--console", "https://console.example.com",
		"--core-url", "https://core.example.com", "--provider", "docker",
		"--installation-id", "0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c", "--sha256", strings.Repeat("a", 64)}))
}

// Ctrl-C typed at the prompt of a terminal ends the command at once: exit
// 130, echo restored, "Nothing was changed.", and no line typed after it
// taken as the token.
func TestCtrlCAtTheTokenPrompt(t *testing.T) {
	master, slave := openPTY(t)
	defer slave.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestTokenPromptChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "OAC_TOKEN_PROMPT_CHILD=1")
	var stdout, stderr syncBuffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, &stdout, &stderr
	// The child's own session, with the terminal as its controlling
	// terminal: Ctrl-C on it signals the child's process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waitFor(t, &stderr, "Enrollment token: ")
	master.WriteString("half")
	master.Write([]byte{3}) // the terminal's interrupt character, Ctrl-C
	var err error
	select {
	case err = <-exited:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("Ctrl-C did not end the prompt; stderr:\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), tokenPromptMessage) {
		t.Errorf("stderr lacks %q:\n%s", tokenPromptMessage, stderr.String())
	}
	t.Logf("stderr: %q", stderr.String())
	if stdout.String() != "" {
		t.Errorf("a command was printed: %q", stdout.String())
	}
	if !echoOn(t, slave) {
		t.Error("echo is not restored after Ctrl-C")
	}
}

// echoOn reports whether the terminal f echoes.
func echoOn(t *testing.T, f *os.File) bool {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return tio.Lflag&unix.ECHO != 0
}

// waitFor waits until b holds want.
func waitFor(t *testing.T, b *syncBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(b.String(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %q", want, b.String())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
