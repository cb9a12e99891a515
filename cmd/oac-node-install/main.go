// Command oac-node-install installs, maintains and removes an OAC sandbox
// node. This package only parses the command line and wires the workflows;
// the work is done in packages workflow and steps.
//
// The command tree (cli.go) is built with cobra: the root command takes the
// original installer's flags and runs install, uninstall or the generation
// helper; status, leases, version, help and completion are subcommands. The
// wiring of each workflow — its definition, its steps, its journal — is in
// one function per command: install.go, uninstall.go, and, for the generation
// helper, steps/generation (Run) called from helper.go.
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
