package noderoot

import (
	"os"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
)

// TestMain removes the fixture releases the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	generationtest.Cleanup()
	os.Exit(code)
}
