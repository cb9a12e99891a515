package install

import (
	"context"
	"fmt"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/workflow"
)

// readTokenStep records whether the run has an enrollment token (never the
// token itself).
type readTokenStep struct{ d Data }

func (s readTokenStep) Run(context.Context, workflow.Facts) (workflow.Result, error) {
	if s.d.Token() == "" {
		return workflow.Result{Event: workflow.EventTokenNotNeeded}, nil
	}
	return workflow.Result{Event: workflow.EventTokenRead}, nil
}

func (s readTokenStep) Check(ctx context.Context, f workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	res, err := s.Run(ctx, f)
	return done, res, err
}

// CheckToken refuses an enrollment token that cannot be one by
// ident.CheckToken, saying which rule it breaks (never the token).
func CheckToken(tok string) error {
	if err := ident.CheckToken(tok); err != nil {
		return fmt.Errorf("standard input: %w; run the command Web generated", err)
	}
	return nil
}
