package noderoot

import (
	"context"
	"fmt"

	"github.com/openagentcore/oac-node-install/steps/host/microsandbox"
)

// Docker implements Data.
func (e *Env) Docker(ctx context.Context) (Docker, error) {
	if e.docker != nil {
		return e.docker, nil
	}
	base, err := e.Base()
	if err != nil {
		return nil, err
	}
	if base.Docker == nil || e.opts.Docker == nil {
		return nil, fmt.Errorf("this node has no Docker Engine configured")
	}
	d, err := e.opts.Docker(ctx, base.Docker.Host)
	if err != nil {
		return nil, fmt.Errorf("connect to the Docker Engine %s: %w", base.Docker.Host, err)
	}
	e.docker = d
	return d, nil
}

// Microsandbox implements Data. Every msb process inherits the held
// install.lock, so that a helper killed during a load or a removal leaves
// the node locked until msb is done: the rerun's Verify never sees a load
// or removal half done.
func (e *Env) Microsandbox(msb, store, firmware string) Microsandbox {
	if e.opts.Microsandbox != nil {
		return e.opts.Microsandbox(msb, store, firmware)
	}
	return &microsandbox.CLI{MSB: msb, Store: store, Firmware: firmware, Inherit: e.heldLocks()}
}
