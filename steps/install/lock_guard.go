package install

import (
	"context"
	"fmt"

	"github.com/openagentcore/oac-node-install/workflow"
)

// LockGuarded wraps every step so that, before it runs or is verified,
// verify checks that the host lock still holds the path it was taken by
// (safefile.FileLock.Verify: the same inode at /run/oac-node.lock). A
// lock file removed or replaced while the command runs lets another
// command take "the" lock at the same time (DESIGN §3.1): the run stops
// before its next step, naming the lock, instead of deciding and changing
// the host beside that other command.
func LockGuarded(steps map[workflow.State]workflow.Step, verify func() error) map[workflow.State]workflow.Step {
	out := make(map[workflow.State]workflow.Step, len(steps))
	for st, s := range steps {
		g := guarded{s: s, verify: verify}
		if _, ok := s.(workflow.Verifier); ok {
			out[st] = guardedVerifier{g}
		} else {
			out[st] = g
		}
	}
	return out
}

type guarded struct {
	s      workflow.Step
	verify func() error
}

func (g guarded) check() error {
	if err := g.verify(); err != nil {
		return fmt.Errorf("the host lock: %w; another node installation or uninstallation may have taken it meanwhile: once none runs (pgrep -a oac-node-install), rerun the command", err)
	}
	return nil
}

func (g guarded) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	if err := g.check(); err != nil {
		return workflow.Result{}, workflow.Unchanged(err)
	}
	return g.s.Run(ctx, facts)
}

type guardedVerifier struct{ guarded }

func (g guardedVerifier) Verify(ctx context.Context, facts workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	if err := g.check(); err != nil {
		return workflow.Unknown, workflow.Result{}, workflow.Unchanged(err)
	}
	return g.s.(workflow.Verifier).Verify(ctx, facts)
}
