package generation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/workflow"
)

// InstallRole is the privsep role that runs one of the installation's
// service-account steps.
const InstallRole = "install-node"

// InstallStepRequest is what root sends the service-account child for one
// step, over the request pipe (never in arguments or the environment: it
// may hold the enrollment token).
type InstallStepRequest struct {
	Step   string            `json:"step"`
	Verify bool              `json:"verify"`
	Facts  map[string]string `json:"facts"`

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

// InstallStepResult is the child's answer: the step's result, and for a
// verification its outcome.
type InstallStepResult struct {
	Outcome workflow.Outcome  `json:"outcome,omitempty"`
	Event   workflow.Event    `json:"event,omitempty"`
	Facts   map[string]string `json:"facts,omitempty"`
	// Configuration is the answer of a StepConfiguration request.
	Configuration json.RawMessage `json:"configuration,omitempty"`
	// Checks is the answer of a StepCheck request, and of a
	// StepConfiguration request with Check when Checked is set.
	Checks  []InstallStepCheck `json:"checks,omitempty"`
	Checked bool               `json:"checked,omitempty"`
}

// InstallAdapters are the host adapters the child's steps use.
type InstallAdapters struct {
	Docker       func(ctx context.Context, host string) (noderoot.Docker, error)
	Microsandbox func(msb, store, firmware string) noderoot.Microsandbox
	Register     Registrar
}

// ServeInstallStep returns the InstallRole handler: it decodes the request,
// opens the node (creating the node root first for the node_root step),
// and runs or verifies the one step. Progress lines go to the parent.
func ServeInstallStep(a InstallAdapters) privsep.Handler {
	return func(ctx context.Context, c *privsep.Child) (any, error) {
		var req InstallStepRequest
		if err := c.Decode(&req); err != nil {
			return nil, err
		}
		if req.Step == StepConfiguration {
			conf, err := NodeConfiguration(ctx, os.Getenv("HOME"), req.InstallationID, os.Getuid(),
				RecordedCore{Origin: req.CoreOrigin, AllowInsecureOrigin: req.AllowInsecureOrigin, CA: req.CoreCA})
			if err != nil {
				return nil, classify(err)
			}
			raw, err := conf.MarshalJSON()
			if err != nil || !req.Check {
				return InstallStepResult{Configuration: raw}, err
			}
			req.Step, req.Check, req.Configuration = StepCheck, false, raw
			res, err := serveInstallStep(ctx, c, a, req)
			if err != nil {
				// A failed check is left to a check of its own, which
				// reports it where it belongs: after the preflight checks.
				return InstallStepResult{Configuration: raw}, nil
			}
			res.Configuration, res.Checked = raw, true
			return res, nil
		}
		return serveInstallStep(ctx, c, a, req)
	}
}

// serveInstallStep runs or verifies the one step of req.
func serveInstallStep(ctx context.Context, c *privsep.Child, a InstallAdapters, req InstallStepRequest) (InstallStepResult, error) {
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
	in := InstallOptions{
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
		Log:      progressWriter{c},
		Progress: transferReporter(c),
	}
	res, err := RunInstallStep(ctx, in, req)
	return res, classify(err)
}

// classify gives a step's error its privsep class by type: a refusal
// changed nothing, an artifact failure is a transfer failure.
func classify(err error) error {
	var ref *noderoot.RefusalError
	var art *noderoot.ArtifactError
	var rej *RegistrationRejected
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rej) && rej.Code == CodeAddressMismatch:
		return privsep.WithClass(privsep.ClassUnregistered, err)
	case errors.As(err, &ref):
		return privsep.WithClass(privsep.ClassRefused, err)
	case errors.As(err, &art):
		return privsep.WithClass(privsep.ClassTransfer, err)
	}
	return err
}

// RunInstallStep runs or verifies one service-account step of an
// installation.
func RunInstallStep(ctx context.Context, in InstallOptions, req InstallStepRequest) (InstallStepResult, error) {
	if req.Step == StepCheck {
		return CheckInstallSteps(ctx, in, req)
	}
	if req.Step == string(workflow.InstallNodeRoot) {
		if err := EnsureNodeRoot(in.Home, in.InstallationID, in.UID); err != nil {
			return InstallStepResult{}, err
		}
	}
	e, err := NewInstallEnv(ctx, in)
	if err != nil {
		return InstallStepResult{}, err
	}
	defer e.Close()
	if req.Step == string(workflow.InstallRegister) {
		e.SetToken(req.Token)
	}
	step, ok := InstallSteps(e)[workflow.State(req.Step)]
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

// progressWriter turns log lines into the child's progress lines.
type progressWriter struct{ c *privsep.Child }

func (p progressWriter) Write(b []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if line != "" {
			p.c.Progress(line)
		}
	}
	return len(b), nil
}
