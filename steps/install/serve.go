package install

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Input is the installation's own part of a request to the
// service account (asaccount.Request.Input).
type Input struct {
	InstallationID      string          `json:"installation_id"`
	SourceURL           string          `json:"source_url"`
	Bundle              string          `json:"bundle,omitempty"`
	CoreOrigin          string          `json:"core_origin"`
	AllowInsecureOrigin bool            `json:"allow_insecure_origin"`
	CoreCA              []byte          `json:"core_ca,omitempty"`
	Configuration       json.RawMessage `json:"configuration"`
	// Check, with StepConfiguration, asks the child to check every
	// service-account step too (StepCheck) with the configuration it read:
	// a registered node's rerun then needs one child, not two.
	Check bool `json:"check,omitempty"`
	// Token is sent only for the register step.
	Token string `json:"token,omitempty"`
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

// InstallStepRequest is one request as the child's install steps see it:
// the step, whether it verifies, the run's facts and the installation's
// input.
type InstallStepRequest struct {
	Step   string
	Verify bool
	Facts  map[string]string
	Input
}

// installStepRequest is req as the child's install steps see it.
func installStepRequest(req asaccount.Request) (InstallStepRequest, error) {
	r := InstallStepRequest{Step: req.Step, Verify: req.Verify, Facts: req.Facts}
	if err := req.DecodeInput(&r.Input); err != nil {
		return InstallStepRequest{}, err
	}
	return r, nil
}

// InstallStepResult is a step's answer in the child: the step's result,
// for a verification its outcome, and the installation's own answers.
type InstallStepResult struct {
	Outcome       workflow.Outcome
	Event         workflow.Event
	Facts         map[string]string
	Configuration json.RawMessage
	Checks        []NodeCheck
	Checked       bool
}

// answer is the result as the child sends it.
func (r InstallStepResult) answer() (asaccount.Answer, error) {
	a := asaccount.Answer{Outcome: r.Outcome, Event: r.Event, Facts: r.Facts}
	if out := (Output{Configuration: r.Configuration, Checks: r.Checks, Checked: r.Checked}); out.Configuration != nil || out.Checks != nil || out.Checked {
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
	return asaccount.Server{Serve: func(ctx context.Context, c *privsep.Child, req asaccount.Request) (asaccount.Answer, error) {
		r, err := installStepRequest(req)
		if err != nil {
			return asaccount.Answer{}, err
		}
		if r.Step == StepConfiguration {
			conf, err := NodeConfiguration(ctx, os.Getenv("HOME"), r.InstallationID, os.Getuid(),
				RecordedCore{Origin: r.CoreOrigin, AllowInsecureOrigin: r.AllowInsecureOrigin, CA: r.CoreCA})
			if err != nil {
				return asaccount.Answer{}, err
			}
			raw, err := conf.MarshalJSON()
			if err != nil {
				return asaccount.Answer{}, err
			}
			if !r.Check {
				return InstallStepResult{Configuration: raw}.answer()
			}
			r.Step, r.Check, r.Configuration = StepCheck, false, raw
			res, err := serveStep(ctx, c, a, r)
			if err != nil {
				// A failed check is left to a check of its own, which
				// reports it where it belongs: after the preflight checks.
				return InstallStepResult{Configuration: raw}.answer()
			}
			res.Configuration, res.Checked = raw, true
			return res.answer()
		}
		res, err := serveStep(ctx, c, a, r)
		if err != nil {
			return asaccount.Answer{}, err
		}
		return res.answer()
	}, Errors: ServerErrors}
}

// serveStep runs or verifies the one step of req.
func serveStep(ctx context.Context, c *privsep.Child, a Adapters, req InstallStepRequest) (InstallStepResult, error) {
	conf, err := core.ParseConfiguration(req.Configuration)
	if err != nil {
		return InstallStepResult{}, err
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
	in := NodeOptions{
		InstallationID: req.InstallationID, Home: home, UID: uid, SourceURL: req.SourceURL, Bundle: req.Bundle, CoreOrigin: req.CoreOrigin,
		AllowInsecureOrigin: req.AllowInsecureOrigin, CoreCA: req.CoreCA, Configuration: conf,
		Docker: a.Docker, Microsandbox: a.Microsandbox, Register: a.Register,
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
	}
	return runStep(ctx, in, req)
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
func RunStep(ctx context.Context, in NodeOptions, req asaccount.Request) (asaccount.Answer, error) {
	r, err := installStepRequest(req)
	if err != nil {
		return asaccount.Answer{}, err
	}
	res, err := runStep(ctx, in, r)
	if err != nil {
		return asaccount.Answer{}, err
	}
	return res.answer()
}

// runStep runs, verifies or checks the one step of req.
func runStep(ctx context.Context, in NodeOptions, req InstallStepRequest) (InstallStepResult, error) {
	if req.Step == StepCheck {
		return CheckNodeSteps(ctx, in, req)
	}
	if req.Step == string(workflow.InstallNodeRoot) {
		if err := EnsureNodeRoot(in.Home, in.InstallationID, in.UID); err != nil {
			return InstallStepResult{}, err
		}
	}
	e, err := NewNodeEnv(ctx, in)
	if err != nil {
		return InstallStepResult{}, err
	}
	defer e.Close()
	if req.Step == string(workflow.InstallRegister) {
		e.SetToken(req.Token)
	}
	step, ok := nodeSteps(e)[workflow.State(req.Step)]
	if !ok {
		return InstallStepResult{}, fmt.Errorf("installation: %q is not a service-account step", req.Step)
	}
	facts := workflow.Facts(req.Facts)
	if facts == nil {
		facts = workflow.Facts{}
	}
	if req.Verify {
		v, ok := step.(workflow.Verifier)
		if !ok {
			return InstallStepResult{}, fmt.Errorf("installation: step %s cannot be verified", req.Step)
		}
		out, res, err := v.Verify(ctx, facts)
		if err != nil {
			return InstallStepResult{}, err
		}
		return InstallStepResult{Outcome: out, Event: res.Event, Facts: res.Facts}, nil
	}
	res, err := step.Run(ctx, facts)
	if err != nil {
		return InstallStepResult{}, err
	}
	return InstallStepResult{Event: res.Event, Facts: res.Facts}, nil
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
