package main

import (
	"context"

	"github.com/openagentcore/oac-node-install/steps/generation"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/status"
)

// childRoles are every role the parent side starts in a service-account
// child of this binary: reading node roots for status and leases, and the
// installation's service-account steps.
var childRoles = map[string]privsep.Handler{
	status.Role: func(ctx context.Context, c *privsep.Child) (any, error) {
		lessGC()
		return status.Serve(ctx, c)
	},
	generation.InstallRole: generation.ServeInstallStep(generation.InstallAdapters{
		Docker: func(_ context.Context, host string) (noderoot.Docker, error) { return docker.New(host) },
	}),
}
