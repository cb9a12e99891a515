package main

import (
	"os"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/privsep"
)

// TestMain lets the test binary serve as its own service-account child, as
// the installer binary does, and removes the fixture releases tests built.
func TestMain(m *testing.M) {
	privsep.ServeChild(os.Args[1:], childRoles)
	code := m.Run()
	generationtest.Cleanup()
	os.Exit(code)
}
