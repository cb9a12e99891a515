package install

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Input is the installation's own part of a request to the
// service account (asaccount.Request.Input).
type Input struct {
	InstallationID      ident.InstallationID `json:"installation_id"`
	SourceURL           string               `json:"source_url"`
	Bundle              string               `json:"bundle,omitempty"`
	CoreOrigin          string               `json:"core_origin"`
	AllowInsecureOrigin bool                 `json:"allow_insecure_origin"`
	CoreCA              []byte               `json:"core_ca,omitempty"`
	Configuration       json.RawMessage      `json:"configuration"`
	// Check, with StepConfiguration, asks the child to check every
	// service-account step too (StepCheck) with the configuration it read:
	// a registered node's rerun then needs one child, not two.
	Check bool `json:"check,omitempty"`
	// Token is sent only for the register step.
	Token string `json:"token,omitempty"`
	// UnlabelledNetwork is set when root's bookkeeping records (or a
	// takeover is about to record) the installation's Docker network as
	// the platform's installer's, which it made without labels: the
	// network step accepts it as this installation's.
	UnlabelledNetwork bool `json:"unlabelled_network,omitempty"`
	// PlatformNode is set when root's bookkeeping records (or a takeover
	// is about to record) that the platform's installer made the node: the
	// helper step replaces the platform's generation-preparer.pyz, the
	// platform's installer itself, with this installer's launcher, also on
	// a registered node.
	PlatformNode bool `json:"platform_node,omitempty"`
}

// Output is the installation's own part of the child's answer
// (asaccount.Answer.Output).
type Output struct {
	// Configuration is the answer of a StepConfiguration request.
	Configuration json.RawMessage `json:"configuration,omitempty"`
	// Checks is the answer of a StepCheck request, and of a
	// StepConfiguration request with Check when Checked is set.
	Checks  []NodeCheck `json:"checks,omitempty"`
	Checked bool        `json:"checked,omitempty"`
}

// answer is the child's answer: the step's result (a verification's
// outcome) with the installation's own answer, when it has one.
func answer(a asaccount.Answer, out Output) (asaccount.Answer, error) {
	if out.Configuration != nil || out.Checks != nil || out.Checked {
		raw, err := json.Marshal(out)
		if err != nil {
			return asaccount.Answer{}, fmt.Errorf("encode the installation's answer: %w", err)
		}
		a.Output = raw
	}
	return a, nil
}

// Adapters are the host adapters the child's steps use.
type Adapters struct {
	Docker       func(ctx context.Context, host string) (noderoot.Docker, error)
	Microsandbox func(msb, store, firmware string) noderoot.Microsandbox
	Register     Registrar
}

// Server is the installation's side in the service-account child
// (asaccount.Server): it opens the node (creating the node root first for
// the node_root step) and runs or verifies the one step, reads a registered
// node's configuration (StepConfiguration), or checks every step
// (StepCheck). Progress lines go to the parent.
func Server(a Adapters) asaccount.Server {
	lock := &InstallLock{} // held across the child's requests
	return asaccount.Server{Serve: func(ctx context.Context, c *privsep.Child, req asaccount.Request) (asaccount.Answer, error) {
		var in Input
		if err := req.DecodeInput(&in); err != nil {
			return asaccount.Answer{}, err
		}
		if req.Step == StepConfiguration {
			lock.Release()
			conf, err := NodeConfiguration(ctx, os.Getenv("HOME"), in.InstallationID, os.Getuid(),
				RecordedCore{Origin: in.CoreOrigin, AllowInsecureOrigin: in.AllowInsecureOrigin, CA: in.CoreCA})
			if err != nil {
				return asaccount.Answer{}, err
			}
			raw, err := conf.MarshalJSON()
			if err != nil {
				return asaccount.Answer{}, err
			}
			if !in.Check {
				return answer(asaccount.Answer{}, Output{Configuration: raw})
			}
			req.Step, in.Check, in.Configuration = StepCheck, false, raw
			res, out, err := serveStep(ctx, c, a, lock, req, in)
			if err != nil {
				// A failed check is left to a check of its own, which
				// reports it where it belongs: after the preflight checks.
				return answer(asaccount.Answer{}, Output{Configuration: raw})
			}
			out.Configuration, out.Checked = raw, true
			return answer(res, out)
		}
		res, out, err := serveStep(ctx, c, a, lock, req, in)
		if err != nil {
			return asaccount.Answer{}, err
		}
		return answer(res, out)
	}, Errors: ServerErrors}
}

// serveStep runs, verifies or checks the one step of req, with its input
// in.
func serveStep(ctx context.Context, c *privsep.Child, a Adapters, lock *InstallLock, req asaccount.Request, in Input) (asaccount.Answer, Output, error) {
	conf, err := core.ParseConfiguration(in.Configuration)
	if err != nil {
		return asaccount.Answer{}, Output{}, err
	}
	// The sealed copy stays mapped while the step runs: the helper
	// step and its check read it in place, without a copy.
	var exe *privsep.Binary
	defer func() {
		if exe != nil {
			exe.Close()
		}
	}()
	home := os.Getenv("HOME")
	uid := os.Getuid()
	opts := NodeOptions{
		InstallationID: in.InstallationID, Home: home, UID: uid, SourceURL: in.SourceURL, Bundle: in.Bundle, CoreOrigin: in.CoreOrigin,
		AllowInsecureOrigin: in.AllowInsecureOrigin, CoreCA: in.CoreCA, Configuration: conf, UnlabelledNetwork: in.UnlabelledNetwork,
		PlatformNode: in.PlatformNode,
		Docker:       a.Docker, Microsandbox: a.Microsandbox, Register: a.Register,
		Helper: func() ([]byte, error) {
			if exe == nil {
				b, err := c.Executable()
				if err != nil {
					return nil, err
				}
				exe = b
			}
			return exe.Mapped(), nil
		},
		Log:      asaccount.Log(c),
		Progress: transferReporter(c),
		Lock:     lock,
	}
	return runStep(ctx, opts, req, in)
}

// ServerErrors are the install and uninstall steps' error types that the
// child reports with a class of their own: Core's refusal of the node's
// public URL ends its registration for good, and an artifact's failure is
// a transfer failure.
var ServerErrors = asaccount.Errors{
	Unregistered: func(err error) bool {
		var rej *RegistrationRejected
		return errors.As(err, &rej) && rej.Code == CodeAddressMismatch
	},
	Transfer: func(err error) bool {
		var art *noderoot.ArtifactError
		return errors.As(err, &art)
	},
}

// RunStep runs, verifies or checks one service-account step of an
// installation as req asks, with in's options: what Server does
// once the child's options are set (tests call it in process).
func RunStep(ctx context.Context, opts NodeOptions, req asaccount.Request) (asaccount.Answer, error) {
	var in Input
	if err := req.DecodeInput(&in); err != nil {
		return asaccount.Answer{}, err
	}
	res, out, err := runStep(ctx, opts, req, in)
	if err != nil {
		return asaccount.Answer{}, err
	}
	return answer(res, out)
}

// runStep runs, verifies or checks the one step of req, whose input is in.
func runStep(ctx context.Context, opts NodeOptions, req asaccount.Request, in Input) (asaccount.Answer, Output, error) {
	if opts.Lock == nil {
		opts.Lock = &InstallLock{}
		defer opts.Lock.Release()
	}
	if req.Step == StepCheck {
		checks, err := CheckNodeSteps(ctx, opts, req.Facts)
		return asaccount.Answer{}, Output{Checks: checks}, err
	}
	if !underInstallLock(req.Step) {
		opts.Lock.Release()
	} else if req.Step == string(workflow.InstallRegister) {
		// The platform's installer releases it after the registration:
		// the unit starts next, and its node program runs the helper.
		defer opts.Lock.Release()
	}
	if req.Step == string(workflow.InstallNodeRoot) {
		if err := EnsureNodeRoot(opts.Home, opts.InstallationID, opts.UID); err != nil {
			return asaccount.Answer{}, Output{}, err
		}
	}
	e, err := NewNodeEnv(ctx, opts)
	if err != nil {
		return asaccount.Answer{}, Output{}, err
	}
	defer e.Close()
	if underInstallLock(req.Step) {
		if err := opts.Lock.take(e, true); err != nil {
			return asaccount.Answer{}, Output{}, err
		}
	}
	if req.Step == string(workflow.InstallRegister) {
		e.SetToken(in.Token)
	}
	step, ok := nodeSteps(e)[workflow.State(req.Step)]
	if !ok {
		return asaccount.Answer{}, Output{}, fmt.Errorf("installation: %q is not a service-account step", req.Step)
	}
	facts := workflow.Facts(req.Facts)
	if facts == nil {
		facts = workflow.Facts{}
	}
	if req.Verify {
		v, ok := step.(workflow.Verifier)
		if !ok {
			return asaccount.Answer{}, Output{}, fmt.Errorf("installation: step %s cannot be verified", req.Step)
		}
		o, res, err := v.Verify(ctx, facts)
		if err != nil {
			return asaccount.Answer{}, Output{}, err
		}
		return asaccount.Answer{Outcome: o, Event: res.Event, Facts: res.Facts}, Output{}, nil
	}
	res, err := step.Run(ctx, facts)
	if err != nil {
		return asaccount.Answer{}, Output{}, err
	}
	return asaccount.Answer{Event: res.Event, Facts: res.Facts}, Output{}, nil
}

// transferReporter sends the parent each download's progress, at most at
// each change of the whole percent (download.PercentChanges) per file; the
// parent decides how to show it.
func transferReporter(c *privsep.Child) func(name string, done, total int64) {
	files := map[string]func(done, total int64){}
	return func(name string, done, total int64) {
		f := files[name]
		if f == nil {
			f = download.PercentChanges(func(done, total int64) { c.Transfer(name, done, total) })
			files[name] = f
		}
		f(done, total)
	}
}

// childRequest is the install workflow's request to the child for step,
// which is a state or a request of the installation's own (StepCheck,
// StepConfiguration), with the run's facts and the installation's input.
func childRequest(step string, facts map[string]string, in Input) (asaccount.Request, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return asaccount.Request{}, fmt.Errorf("encode the installation's input: %w", err)
	}
	return asaccount.Request{Workflow: workflow.InstallDefinition().Name, Step: step, Facts: maps.Clone(facts), Input: raw}, nil
}
