// Command oac-node-install installs, maintains and removes an OAC sandbox
// node. This file only parses the command line and wires the workflows; the
// work is done in packages workflow and steps.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/openagentcore/oac-node-install/steps/privsep"
)

// Exit codes (CONTRACT §4.4).
const (
	exitOK          = 0
	exitFailure     = 1
	exitTransfer    = 65
	exitInterrupted = 130
)

func main() {
	// A service-account child of this same binary serves its role and exits.
	privsep.ServeChild(os.Args[1:], childRoles)
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if len(args) > 0 {
		switch args[0] {
		case "status":
			return exitCode(stderr, runStatus(ctx, args[1:], stdout, stderr))
		case "leases":
			return exitCode(stderr, runLeases(ctx, args[1:], stdout))
		case "version", "--version":
			fmt.Fprintln(stdout, versionString())
			return exitOK
		}
	}
	return exitCodeAs(stderr, failurePrefix(args), runInstaller(ctx, args, stdin, stdout, stderr))
}

// failurePrefix is how a failed run's message starts: the original
// installer's "Installation failed: ", or the generation helper's own.
func failurePrefix(args []string) string {
	for _, a := range args {
		if a == "--generation-action" || a == "-generation-action" || strings.HasPrefix(a, "--generation-action=") || strings.HasPrefix(a, "-generation-action=") {
			return "Generation helper failed: "
		}
	}
	return "Installation failed: "
}

// usageError is a command-line mistake: printed with the usage hint.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitCoder lets an error choose the exit code (the generation helper's 65).
type exitCoder interface{ ExitCode() int }

func exitCode(stderr io.Writer, err error) int {
	return exitCodeAs(stderr, "Installation failed: ", err)
}

func exitCodeAs(stderr io.Writer, prefix string, err error) int {
	if err == nil {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "oac-node-install: %s\nRun oac-node-install --help for usage.\n", ue.msg)
		return exitFailure
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "Interrupted. Nothing is lost: rerun the same command to continue.")
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "%s%v\n", prefix, err)
	var ec exitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return exitFailure
}
