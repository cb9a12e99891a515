package main

import (
	"context"
	"errors"
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
// A SIGHUP that is ignored when the command starts (it runs under nohup)
// stays ignored: os/signal would install a handler for it on Notify, and
// closing the session would then interrupt the run the operator protected.
func watchSignals(parent context.Context) (context.Context, func()) {
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
			cancel(&signalError{s.(syscall.Signal)})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
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
