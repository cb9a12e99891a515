package uninstall

import (
	"context"
	"fmt"
	"os"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Input is the uninstallation's own part of a request to the
// service account (asaccount.Request.Input). The Core address, its
// insecure-origin policy and the CA's sha256 come from root's records (the
// host record and the bookkeeping), never from files the service account
// can write.
type Input struct {
	InstallationID      ident.InstallationID `json:"installation_id"`
	Provider            string               `json:"provider"`
	CoreURL             string               `json:"core_url"`
	AllowInsecureOrigin bool                 `json:"allow_insecure_origin"`
	CoreCASHA256        string               `json:"core_ca_sha256,omitempty"`
	Force               bool                 `json:"force"`
	// Registered is root's record that the node registered with Core
	// (install.Registered): then Core must confirm the removal, whatever
	// the node root holds.
	Registered bool `json:"registered,omitempty"`
	// UnlabelledNetwork is set when root's bookkeeping records the
	// network oac-node-<id> as the platform's installer's, made without
	// labels: it is removed like a labelled one.
	UnlabelledNetwork bool `json:"unlabelled_network,omitempty"`
}

// Adapters are the host adapters the uninstall child uses.
type Adapters struct {
	// Docker connects to the Docker Engine at host.
	Docker func(ctx context.Context, host string) (Networks, error)
}

// Server is the uninstallation's side in the service-account
// child (asaccount.Server): it runs the one step. Progress lines go to the
// parent.
func Server(a Adapters) asaccount.Server {
	return asaccount.Server{Serve: func(ctx context.Context, c *privsep.Child, req asaccount.Request) (asaccount.Answer, error) {
		in := NodeOptions{Home: os.Getenv("HOME"), UID: os.Getuid(), Docker: a.Docker,
			Proxy: proxy.FromEnviron(os.Environ()), Log: asaccount.Log(c)}
		return RunStep(ctx, in, req)
	}, Errors: install.ServerErrors}
}

// RunStep runs one service-account step of an uninstallation as
// req asks, with in's options: what Server does once the child's
// options are set (tests call it in process).
func RunStep(ctx context.Context, in NodeOptions, req asaccount.Request) (asaccount.Answer, error) {
	var r Input
	if err := req.DecodeInput(&r); err != nil {
		return asaccount.Answer{}, err
	}
	if req.Verify {
		return asaccount.Answer{}, fmt.Errorf("uninstallation: step %s cannot be verified", req.Step)
	}
	res, err := runStep(ctx, in, req.Step, req.Facts, r)
	if err != nil {
		return asaccount.Answer{}, err
	}
	return asaccount.Answer{Event: res.Event, Facts: res.Facts}, nil
}

// runStep runs the one step with the run's facts and its input req.
func runStep(ctx context.Context, in NodeOptions, step string, facts map[string]string, req Input) (workflow.Result, error) {
	// Root sends the id it parsed; the check keeps a request the child
	// did not get from root from naming a path outside the nodes.
	if id := req.InstallationID; !id.Valid() {
		return workflow.Result{}, fmt.Errorf("uninstallation: %q is not an installation id", id)
	}
	var (
		res workflow.Result
		err error
	)
	switch workflow.State(step) {
	case workflow.UninstallAskCore:
		res, err = askCore(ctx, in, req)
	case workflow.UninstallNetwork:
		res, err = removeNetwork(ctx, in, req)
	case workflow.UninstallNodeState:
		res, err = removeNodeState(in, req)
	case workflow.UninstallMicrosandboxStore:
		res, err = removeStores(in, req, facts)
	default:
		return workflow.Result{}, fmt.Errorf("uninstallation: %q is not a service-account step", step)
	}
	return res, err
}
