package install

import (
	"context"
	"os"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/workflow"
)

// TestMain lets the test binary serve as its own service-account child:
// the install workflow's steps, with the fixture's Docker Engine and
// registrar.
func TestMain(m *testing.M) {
	privsep.ServeChild(os.Args[1:], map[string]privsep.Handler{
		asaccount.Role: asaccount.Serve(map[string]asaccount.Server{
			workflow.InstallDefinition().Name: Server(Adapters{
				Docker:   func(context.Context, string) (noderoot.Docker, error) { return fileEngineOf(os.Getenv("HOME")), nil },
				Register: fileRegistrarOf(os.Getenv("HOME")),
			}),
		}),
	})
	code := m.Run()
	generationtest.Cleanup()
	os.Exit(code)
}
