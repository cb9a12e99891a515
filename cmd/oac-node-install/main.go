// Command oac-node-install installs, maintains and removes an OAC sandbox
// node. This package is the command line and its printing: it parses the
// flags, wires each command to its package and prints the outcome; the work
// is done in workflow and steps.
//
// The command tree (cli.go) is built with cobra: the root command takes the
// original installer's flags and runs install, uninstall or the generation
// helper; check, status, leases, command, version, help and completion are
// subcommands. Each command calls one package: install.go steps/install
// (Run), uninstall.go steps/uninstall (Run), status.go and leases.go
// steps/status (Gather, Leases), check.go steps/install (Probe), helper.go
// steps/generation (Run), and command.go steps/record/bootstrap (Render).
//
// Who runs it as whom: install, uninstall, status and leases run as root
// and refuse any other account; check runs as anyone and skips, saying so,
// the checks that need root; command only prints. The node program runs
// the generation helper (--generation-action) as the service account
// oac-node, and the helper refuses root. The same binary is also the
// service-account child: main hands a __privsep-child invocation to
// privsep.ServeChild, which serves the roles of roles.go (node-step:
// install's and uninstall's service-account steps; inspect) as oac-node and
// exits. The
// command never classifies an error by its text: exit codes and the
// "Nothing was changed." line come from the error's type (exit.go,
// workflow.Message).
package main

import (
	"io"
	"os"

	"github.com/openagentcore/oac-node-install/steps/host/privsep"
)

func main() {
	// A service-account child of this same binary serves its role and exits.
	privsep.ServeChild(os.Args[1:], childRoles)
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command line args on the real host and returns the exit
// code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr}
	return c.run(args)
}
