package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/openagentcore/oac-node-install/steps/host/privsep"
)

// signalError is the cause of a run that a signal cancelled.
type signalError struct{ sig syscall.Signal }

func (e *signalError) Error() string { return "interrupted by " + e.sig.String() }

// exitCode is 128 + the signal's number, as a shell reports a command the
// signal killed: SIGINT 130, SIGHUP 129, SIGTERM 143 (CONTRACT §10).
func (e *signalError) exitCode() int { return 128 + int(e.sig) }

// watchSignals returns a context that the first SIGINT, SIGTERM or SIGHUP
// cancels with a *signalError cause, and the function that stops watching.
// onStop, if set, is called at once with that first signal, before the run
// has wound down, so that the operator sees the interrupt answered; later
// signals are taken and dropped (the run is already ending, and a second
// Ctrl-C must not kill it half-way through recording where it stopped).
// A SIGHUP that is ignored when the command starts (it runs under nohup)
// stays ignored: os/signal would install a handler for it on Notify, and
// closing the session would then interrupt the run the operator protected.
func watchSignals(parent context.Context, onStop func(syscall.Signal)) (context.Context, func()) {
	sigs := []os.Signal{syscall.SIGINT, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	ctx, cancel := context.WithCancelCause(parent)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			sig := s.(syscall.Signal)
			cancel(&signalError{sig})
			if onStop != nil {
				onStop(sig)
			}
		case <-done:
			return
		}
		// Drain later signals until the run ends.
		for {
			select {
			case <-ch:
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// stoppingMessage is what the command prints the moment a signal
// interrupts it: the run then stops its service-account child (SIGTERM,
// and SIGKILL after privsep.DefaultGrace), records where it stopped and
// ends with the interrupted message.
const stoppingMessage = "Stopping…"

// stopping prints stoppingMessage on stderr, first finishing the token
// prompt or the progress line a run may have open on the terminal.
func (c *cli) stopping(syscall.Signal) {
	tokenPrompt.end()
	var w io.Writer = c.stderr
	if out := c.out.Load(); out != nil {
		w = out.beside(c.stderr)
	}
	io.WriteString(w, stoppingMessage+"\n")
}

// interruption is the signal that cancelled ctx, or nil.
func interruption(ctx context.Context) *signalError {
	var se *signalError
	if errors.As(context.Cause(ctx), &se) {
		return se
	}
	return nil
}

// childSignals is handed to privsep.Run as its signal source: it never
// delivers, so that Run does not listen for SIGHUP itself (see watchSignals);
// a signal reaches the child through the cancelled context instead.
var childSignals = make(chan os.Signal)

// interruptedRun is the error of a run a signal cancelled, with what
// continues it (install: the command, which its own flags give).
type interruptedRun struct {
	err error
	// next completes "Interrupted. Nothing is lost: ".
	next string
}

func (e *interruptedRun) Error() string { return e.err.Error() }
func (e *interruptedRun) Unwrap() error { return e.err }

// interruptedMessage is the line an interrupted command ends with: what
// continues it, or else the same command; at the token prompt, before any
// change, that nothing was changed.
func interruptedMessage(err error) string {
	var pi *promptInterrupted
	if errors.As(err, &pi) {
		return tokenPromptMessage
	}
	next := "rerun the same command to continue."
	var ir *interruptedRun
	if errors.As(err, &ir) && ir.next != "" {
		next = ir.next
	}
	return privsep.SanitizeString("Interrupted. Nothing is lost: " + next)
}
