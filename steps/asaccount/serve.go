package asaccount

import (
	"context"
	"fmt"

	"github.com/openagentcore/oac-node-install/steps/host/privsep"
)

// Server is one workflow's side in the child.
type Server struct {
	// Serve runs, verifies or checks the step req names, as the service
	// account, and answers. c reports progress to the parent and maps the
	// binary the child runs.
	Serve func(ctx context.Context, c *privsep.Child, req Request) (Answer, error)
	// Errors picks out the workflow's own error types that have a class
	// of their own.
	Errors Errors
}

// Serve returns the Role handler: it decodes each Request, hands it to the
// Server of its workflow, and sends the answer, or the error with its
// class (classify).
func Serve(servers map[string]Server) privsep.Handler {
	return func(ctx context.Context, c *privsep.Child) (any, error) {
		var req Request
		if err := c.Decode(&req); err != nil {
			return nil, err
		}
		srv, ok := servers[req.Workflow]
		if !ok || srv.Serve == nil {
			return nil, fmt.Errorf("%s: no workflow %q is served as the service account", Role, req.Workflow)
		}
		a, err := srv.Serve(ctx, c, req)
		if err != nil {
			return nil, classify(err, srv.Errors)
		}
		return a, nil
	}
}
