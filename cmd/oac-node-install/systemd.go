package main

import (
	"context"
	"errors"

	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/workflow"
)

// dialManager is how install and uninstall reach systemd (tests replace
// it).
var dialManager = systemd.Dial

// dialSystemdManager connects install and uninstall to systemd before
// their first change. A host where systemd answers neither on the system
// bus nor on its private socket does not run systemd: that is refused
// plainly, with the connection's detail after (CONTRACT §10: "Nothing was
// changed.").
func dialSystemdManager(ctx context.Context) (*systemd.DBus, error) {
	sd, err := dialManager(ctx)
	if errors.Is(err, systemd.ErrUnavailable) {
		return nil, workflow.Refusef("this host does not run systemd (nodes run as systemd services; use a host booted with systemd): %v", err)
	}
	if err != nil {
		return nil, workflow.Refuse(err)
	}
	return sd, nil
}
