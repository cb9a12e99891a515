package uninstall

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/testsupport/fakehost"
	"github.com/openagentcore/oac-node-install/workflow"
)

// TestMain lets the test binary serve as its own service-account child.
func TestMain(m *testing.M) {
	privsep.ServeChild(os.Args[1:], map[string]privsep.Handler{
		asaccount.Role: asaccount.Serve(map[string]asaccount.Server{
			workflow.UninstallDefinition().Name: Server(Adapters{
				Docker: func(context.Context, string) (Networks, error) {
					return fileEngineOf(os.Getenv("HOME")), nil
				},
			}),
		}),
	})
	code := m.Run()
	generationtest.Cleanup()
	os.Exit(code)
}

// fileEngineOf is the engine the child and the test share.
func fileEngineOf(home string) *dockertest.FileEngine {
	return &dockertest.FileEngine{Path: filepath.Join(fakehost.EngineDir(home), "state.json")}
}
