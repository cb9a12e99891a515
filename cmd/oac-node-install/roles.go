package main

import (
	"context"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/status"
	"github.com/openagentcore/oac-node-install/steps/uninstall"
	"github.com/openagentcore/oac-node-install/workflow"
)

// childRoles are every role the parent side starts in a service-account
// child of this binary: reading node roots for status and leases, and the
// service-account steps of the install and uninstall workflows.
var childRoles = map[string]privsep.Handler{
	status.Role: func(ctx context.Context, c *privsep.Child) (any, error) {
		lessGC()
		return status.Serve(ctx, c)
	},
	asaccount.Role: asaccount.Serve(map[string]asaccount.Server{
		workflow.InstallDefinition().Name: install.Server(install.Adapters{
			Docker: func(_ context.Context, host string) (noderoot.Docker, error) { return docker.New(host) },
		}),
		workflow.UninstallDefinition().Name: uninstall.Server(uninstall.Adapters{
			Docker: func(_ context.Context, host string) (uninstall.Networks, error) { return docker.New(host) },
		}),
	}),
}
