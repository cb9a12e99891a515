package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
)

// TestMain lets the test binary serve as its own service-account child, as
// the installer binary does, and as the retained generation helper
// (runAsRetainedHelper), and removes the fixture releases tests built.
func TestMain(m *testing.M) {
	runAsRetainedHelper()
	privsep.ServeChild(os.Args[1:], childRoles)
	code := m.Run()
	generationtest.Cleanup()
	os.Exit(code)
}

// runOn runs the command line against the host laid out under hostRoot
// ("" for the real host), with empty standard input, and returns its exit
// code and output.
func runOn(t *testing.T, hostRoot string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runWithInput(t, hostRoot, "", args...)
}

// runWithInput is runOn with stdin as standard input.
func runWithInput(t *testing.T, hostRoot, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := &cli{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut, hostRoot: hostRoot}
	code = c.run(args)
	return code, out.String(), errOut.String()
}

func readDirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, err
}
