package install

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/workflow"
)

// childLog records the steps of the requests a run sent its children.
type childLog struct {
	mu    sync.Mutex
	steps []string
}

// wrap logs each request and edits the answer to the configuration read.
func (l *childLog) wrap(next asaccount.Runner, edit func(*Output)) asaccount.Runner {
	return func(ctx context.Context, req asaccount.Request) (asaccount.Answer, error) {
		l.mu.Lock()
		l.steps = append(l.steps, req.Step)
		l.mu.Unlock()
		res, err := next(ctx, req)
		if err == nil && edit != nil && req.Step == StepConfiguration {
			var out Output
			if err := res.DecodeOutput(&out); err != nil {
				return res, err
			}
			edit(&out)
			if res.Output, err = json.Marshal(out); err != nil {
				return res, err
			}
		}
		return res, err
	}
}

// A registered, healthy node's rerun reads its configuration and checks
// every service-account step in one child; when that child's check gave no
// answer, a child of its own checks, as before.
func TestRerunOfARegisteredNodeStartsOneChild(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.installed(t)
	for _, tc := range []struct {
		name string
		edit func(*Output)
		want string
	}{
		{"one child", nil, StepConfiguration},
		{"the check left to its own child", func(r *Output) { r.Checks, r.Checked = nil, false },
			StepConfiguration + " " + StepCheck},
	} {
		var log childLog
		before := f.tree(t, true)
		rep, err := f.install(t, func(c *Command) { c.Child = log.wrap(c.Child, tc.edit) })
		if err != nil {
			t.Fatalf("%s: rerun: %v\n%s", tc.name, err, f.out.String())
		}
		if rep.Condition != workflow.Complete {
			t.Fatalf("%s: rerun: condition %s", tc.name, rep.Condition)
		}
		if got := strings.Join(log.steps, " "); got != tc.want {
			t.Errorf("%s: the rerun asked children for %q, want %q", tc.name, got, tc.want)
		}
		if d := generationtest.DiffHost(before, f.tree(t, true)); d != "" {
			t.Errorf("%s: the rerun changed the host:\n%s", tc.name, d)
		}
	}
}
