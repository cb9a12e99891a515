package uninstall

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Input is the uninstallation's own part of a request to the
// service account (asaccount.Request.Input). The Core address, its
// insecure-origin policy and the CA's sha256 come from root's records (the
// host record and the bookkeeping), never from files the service account
// can write.
type Input struct {
	InstallationID      string `json:"installation_id"`
	Provider            string `json:"provider"`
	CoreURL             string `json:"core_url"`
	AllowInsecureOrigin bool   `json:"allow_insecure_origin"`
	CoreCASHA256        string `json:"core_ca_sha256,omitempty"`
	Force               bool   `json:"force"`
	// Registered is root's record that the node registered with Core
	// (install.Registered): then Core must confirm the removal, whatever
	// the node root holds.
	Registered bool `json:"registered,omitempty"`
}

// UninstallStepRequest is one request as the child's uninstall steps see
// it: the step (ask_core, network, node_state, microsandbox_store), the
// run's facts and the uninstallation's input.
type UninstallStepRequest struct {
	Step  string
	Facts map[string]string
	Input
}

// UninstallStepResult is a step's result in the child.
type UninstallStepResult struct {
	Event workflow.Event
	Facts map[string]string
}

// Networks is the part of the Docker Engine the uninstall's
// network step uses. The real docker.Client implements it.
type Networks interface {
	NetworkInspect(ctx context.Context, name string) (docker.Network, error)
	NetworkRemove(ctx context.Context, name string) error
	ContainersByLabel(ctx context.Context, key, value string) ([]docker.Container, error)
}

// Adapters are the host adapters the uninstall child uses.
type Adapters struct {
	// Docker connects to the Docker Engine at host.
	Docker func(ctx context.Context, host string) (Networks, error)
}

// NodeOptions describe the service-account side of one uninstall
// step.
type NodeOptions struct {
	// Home is the node account's home; UID the node account.
	Home   string
	UID    int
	Docker func(ctx context.Context, host string) (Networks, error)
	// Proxy is the proxy snapshot for the request to Core.
	Proxy download.ProxyEnv
	// Log receives progress lines (nil: discarded).
	Log io.Writer
}

func (o NodeOptions) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

func (o NodeOptions) nodeRoot(id string) string { return layout.NodeRootIn(o.Home, id) }

// openNodeRoot opens the node root of id beneath the home, through no
// symbolic link (the home's subdirectories are the service account's to
// replace).
func (o NodeOptions) openNodeRoot(id string) (*safefile.Root, error) {
	return safefile.OpenRootIn(o.Home, layout.NodeRel(id), safefile.Expect{UID: safefile.AnyUID})
}

// Server is the uninstallation's side in the service-account
// child (asaccount.Server): it runs the one step. Progress lines go to the
// parent.
func Server(a Adapters) asaccount.Server {
	return asaccount.Server{Serve: func(ctx context.Context, c *privsep.Child, req asaccount.Request) (asaccount.Answer, error) {
		in := NodeOptions{Home: os.Getenv("HOME"), UID: os.Getuid(), Docker: a.Docker,
			Proxy: download.ProxyEnvFromEnviron(os.Environ()), Log: asaccount.Log(c)}
		return RunStep(ctx, in, req)
	}, Errors: install.ServerErrors}
}

// RunStep runs one service-account step of an uninstallation as
// req asks, with in's options: what Server does once the child's
// options are set (tests call it in process).
func RunStep(ctx context.Context, in NodeOptions, req asaccount.Request) (asaccount.Answer, error) {
	r := UninstallStepRequest{Step: req.Step, Facts: req.Facts}
	if err := req.DecodeInput(&r.Input); err != nil {
		return asaccount.Answer{}, err
	}
	if req.Verify {
		return asaccount.Answer{}, fmt.Errorf("uninstallation: step %s cannot be verified", req.Step)
	}
	res, err := runStep(ctx, in, r)
	if err != nil {
		return asaccount.Answer{}, err
	}
	return asaccount.Answer{Event: res.Event, Facts: res.Facts}, nil
}

// runStep runs the one step of req.
func runStep(ctx context.Context, in NodeOptions, req UninstallStepRequest) (UninstallStepResult, error) {
	if id := req.InstallationID; id == "" || strings.HasPrefix(id, ".") || filepath.Base(id) != id {
		return UninstallStepResult{}, fmt.Errorf("uninstallation: %q is not an installation id", id)
	}
	var (
		res UninstallStepResult
		err error
	)
	switch workflow.State(req.Step) {
	case workflow.UninstallAskCore:
		res, err = askCore(ctx, in, req)
	case workflow.UninstallNetwork:
		res, err = removeNetwork(ctx, in, req)
	case workflow.UninstallNodeState:
		res, err = removeNodeState(in, req)
	case workflow.UninstallMicrosandboxStore:
		res, err = removeStores(in, req)
	default:
		return UninstallStepResult{}, fmt.Errorf("uninstallation: %q is not a service-account step", req.Step)
	}
	return res, err
}
