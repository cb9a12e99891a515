package generation

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/workflow"
)

// factDropped is "true" when the generation was already dropped: the
// remaining collect steps change nothing.
const factDropped = "dropped"

// recheckStep rechecks, under the exclusive lease and install.lock, every
// reference the node can see before anything is written: the generation's
// own records name its installation and specification; a plan is an exact
// plan; every other retained configuration can be read; and what would be
// removed is either shared (then kept) or proven private file by file.
// The node program's own references (queued provider calls, target,
// serving pin) are checked by the node before it runs the helper; a live
// helper holds the lease, which Run could not have locked.
type recheckStep struct{ d noderoot.Data }

func (s recheckStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	d := s.d
	id := d.Identity()
	if ok, err := noderoot.Dropped(d, id.Generation); err != nil {
		return workflow.Result{}, workflow.Unchanged(err)
	} else if ok {
		got, err := lease.ReadDropped(d.Node().Generations(), id.Generation, d.UID())
		if err != nil {
			return workflow.Result{}, workflow.Unchanged(noderoot.Refusal("", err))
		}
		if got != id {
			return workflow.Result{}, workflow.Unchanged(noderoot.Refusef(noderoot.ErrSpecification, "", "generation %d was dropped as %s", id.Generation, got))
		}
		d.Logf("generation %d was already collected", id.Generation)
		return workflow.Result{Facts: map[string]string{factDropped: "true"}}, nil
	}
	if err := checkCollecting(d); err != nil {
		return workflow.Result{}, workflow.Unchanged(err)
	}
	gc, err := collectTarget(d)
	if err != nil {
		return workflow.Result{}, workflow.Unchanged(err)
	}
	r, err := noderoot.PlanRemoval(d, gc)
	if err != nil {
		return workflow.Result{}, workflow.Unchanged(noderoot.Refusal("Nothing is removed until every file is proven private and unreferenced", err))
	}
	if r.Shared() != "" {
		d.Logf("the release files of generation %d stay: %s", id.Generation, r.Shared())
	}
	return workflow.Result{}, nil
}

// collectTarget is the generation's configuration for collection (nil when
// it has none: nothing native and no files to remove), checked against the
// run's identity; a plan must be an exact plan of this node.
func collectTarget(d noderoot.Data) (*noderoot.GenerationConfig, error) {
	gc, err := noderoot.CurrentConfig(d)
	if err != nil || gc == nil {
		return nil, err
	}
	if err := noderoot.CheckIdentity(d, gc.Config); err != nil {
		return nil, noderoot.Refusal("", err)
	}
	if !gc.Base {
		base, err := d.Base()
		if err != nil {
			return nil, err
		}
		if err := provider.CheckPlan(gc.Config, base, d.Node().Root, d.Home()); err != nil {
			return nil, noderoot.Refusal("", fmt.Errorf("generation %d: %w", gc.Config.Generation, err))
		}
	}
	return gc, nil
}

// checkCollecting requires an existing collection journal to be this
// generation's.
func checkCollecting(d noderoot.Data) error {
	id := d.Identity()
	c, err := lease.ReadCollecting(d.Node().Generations(), id.Generation, d.UID())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return noderoot.Refusal("", err)
	}
	if c.Identity != id {
		return noderoot.Refusef(noderoot.ErrSpecification, "", "the collection journal of generation %d is for %s", id.Generation, c.Identity)
	}
	return nil
}
