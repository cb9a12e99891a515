package install

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/workflow"
)

// providerConfigStep publishes provider.json, the base configuration of
// the enrolled generation, with the local image ID the runtime step
// resolved. It is write-once for a registered node (a difference refuses);
// before registration an earlier attempt's different file is replaced.
type providerConfigStep struct{ e *NodeEnv }

func (s providerConfigStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	e := s.e
	c := e.base.Clone()
	if c.Docker != nil {
		if facts[factImageID] == "" {
			return workflow.Result{}, errors.New("the runtime step recorded no image ID")
		}
		c.Docker.Image = facts[factImageID]
	}
	if err := c.Validate(); err != nil {
		return workflow.Result{}, err
	}
	data, err := c.Marshal()
	if err != nil {
		return workflow.Result{}, err
	}
	registered, err := e.Registered()
	if err != nil {
		return workflow.Result{}, err
	}
	if !registered {
		old, err := e.ReadPrivate(layout.ProviderConfigFile, provider.MaxSize)
		if err != nil || !noderoot.SameRecord(old, data) {
			return workflow.Result{}, e.Root().AtomicWrite(layout.ProviderConfigFile, data, 0o600)
		}
	}
	if err := noderoot.PublishRecord(e.Root(), layout.ProviderConfigFile, data, 0o600); err != nil {
		if errors.Is(err, safefile.ErrConflict) {
			return workflow.Result{}, noderoot.Refusal("This node is registered with another configuration: remove it in Web, run --uninstall, then add it again with a new command", fmt.Errorf("provider.json: %w", err))
		}
		return workflow.Result{}, err
	}
	e.base = c
	return workflow.Result{}, nil
}

// Check: provider.json holds what the step would publish; a registered
// node's different file refuses.
func (s providerConfigStep) Check(ctx context.Context, facts workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	c := e.base.Clone()
	if c.Docker != nil {
		if facts[factImageID] == "" {
			return notDone, workflow.Result{}, nil
		}
		c.Docker.Image = facts[factImageID]
	}
	if err := c.Validate(); err != nil {
		return 0, workflow.Result{}, err
	}
	data, err := c.Marshal()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	registered, err := e.Registered()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	old, err := e.ReadPrivate(layout.ProviderConfigFile, provider.MaxSize)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return notDone, workflow.Result{}, nil
	case err == nil && noderoot.SameRecord(old, data):
		return done, workflow.Result{}, nil
	case registered:
		return 0, workflow.Result{}, noderoot.Refusal("This node is registered with another configuration: remove it in Web, run --uninstall, then add it again with a new command", fmt.Errorf("provider.json: %w", safefile.ErrConflict))
	}
	return notDone, workflow.Result{}, nil
}
