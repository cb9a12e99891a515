package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Exit codes (CONTRACT §4.4, §10).
const (
	exitOK        = 0
	exitFailure   = 1
	exitAttention = 2 // status: something needs attention
	exitTransfer  = 65
	// Interrupted outside a child step: 128 + the signal's number (SIGINT
	// 130, SIGHUP 129, SIGTERM 143); see signals.go.
	exitInterrupted = 130
)

// Failure prefixes: each command's failures start with its own.
const (
	prefixInstall   = "Installation failed: "
	prefixUninstall = "Uninstall failed: "
	prefixHelper    = "Generation helper failed: "
	prefixStatus    = "status: "
	prefixLeases    = "leases: "
	prefixVersion   = "version: "
)

// usageError is a command-line mistake: printed with the command's failure
// prefix and a pointer to its --help, exit 1.
type usageError struct {
	msg string
	// notInstall: the root command's argument names no command, or its
	// flag is another command's; either is no installation's failure.
	notInstall bool
}

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// exitCoder lets an error choose the exit code (the generation helper's 65).
type exitCoder interface{ ExitCode() int }

// quietExit ends a command that already printed what it had to say with a
// code other than 0 (status: 2 when something needs attention).
type quietExit struct{ code int }

func (e *quietExit) Error() string { return fmt.Sprintf("exit status %d", e.code) }
func (e *quietExit) ExitCode() int { return e.code }

// failure is how one command ends: its prefix, the command path its --help
// belongs to, and whether its refusals state that nothing was changed (the
// commands that change the host: install, uninstall, the helper).
type failure struct {
	prefix   string
	path     string
	changing bool
}

// report prints err for the operator and returns the exit code. A nil err
// is success; interrupted is the signal that cancelled the run, if any.
func (f failure) report(stderr io.Writer, err error, interrupted *signalError) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		// A usage error may quote the command line: printed as one line
		// without terminal controls.
		msg := field(ue.msg)
		if f.changing {
			msg = strings.TrimSuffix(msg, ".") + ". " + workflow.NothingWasChanged
		}
		fmt.Fprintf(stderr, "%s%s\nRun '%s --help' for usage.\n", f.prefix, msg, f.path)
		return exitFailure
	}
	var q *quietExit
	if errors.As(err, &q) {
		return q.code
	}
	// What an error says may hold what a service account, a Core or a
	// file wrote: it reaches the terminal only through the sanitizer. A
	// refusal of a command that changes the host says here, once, that
	// nothing was changed when nothing was (workflow.Message); a failure
	// after a change says what changed instead.
	text := err.Error()
	if f.changing {
		text = workflow.Message(err)
	}
	msg := privsep.SanitizeString(withoutRoles(err, text))
	var ec exitCoder
	if errors.As(err, &ec) {
		fmt.Fprintf(stderr, "%s%s\n", f.prefix, msg)
		return ec.ExitCode()
	}
	if interrupted != nil {
		fmt.Fprintln(stderr, interruptedMessage(err))
		return interrupted.exitCode()
	}
	fmt.Fprintf(stderr, "%s%s\n", f.prefix, msg)
	return exitFailure
}

// withoutRoles is text, the operator's message of err, with each service
// account child's failure in err's tree as the child's own words: a
// privsep.ChildError reads "<role> (as oac-node): <message>", and its role
// names an internal step that tells the operator nothing (the error keeps
// it for logs and tests).
func withoutRoles(err error, text string) string {
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
			return
		case *privsep.ChildError:
			text = strings.Replace(text, e.Error(), e.Message, 1)
			return
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			walk(e.Unwrap())
		}
	}
	walk(err)
	return text
}
