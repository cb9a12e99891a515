package main

import (
	"os"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/privsep"
)

// TestMain lets the test binary serve as its own service-account child, as
// the installer binary does.
func TestMain(m *testing.M) {
	privsep.ServeChild(os.Args[1:], childRoles)
	os.Exit(m.Run())
}
