package install

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"

	"github.com/openagentcore/oac-node-install/workflow"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Before the engine runs, the command checks the host (Preflight), reads
// the token and Core's configuration, and takes the host lock: a refusal
// must come before any change, and the journal is a change. These steps
// record in the journal what was established, and re-check what is cheap.

// preflightStep records the preflight's outcome.
type preflightStep struct{ d Data }

func (s preflightStep) Run(context.Context, workflow.Facts) (workflow.Result, error) {
	return workflow.Result{}, nil
}

// readTokenStep records whether the run has an enrollment token (never the
// token itself).
type readTokenStep struct{ d Data }

func (s readTokenStep) Run(context.Context, workflow.Facts) (workflow.Result, error) {
	if s.d.Token() == "" {
		return workflow.Result{Event: workflow.EventTokenNotNeeded}, nil
	}
	return workflow.Result{Event: workflow.EventTokenRead}, nil
}

// readConfigurationStep records the generation and specification digest of
// Core's configuration.
type readConfigurationStep struct{ d Data }

func (s readConfigurationStep) Run(context.Context, workflow.Facts) (workflow.Result, error) {
	c := s.d.Configuration()
	if c == nil {
		return workflow.Result{}, errors.New("no Core configuration was read")
	}
	return workflow.Result{Facts: map[string]string{"specification_digest": c.SpecificationDigest}}, nil
}

// hostLockStep checks that the command holds /run/oac-node.lock and
// re-checks the host records under it: another installation's record on
// the host refuses a node this host does not record (one Core per host).
// The command decided the same under the same lock before the engine ran;
// this is the journal's own check of it.
type hostLockStep struct{ d Data }

func (s hostLockStep) Run(context.Context, workflow.Facts) (workflow.Result, error) {
	if !s.d.HostLocked() {
		return workflow.Result{}, errors.New("the host lock /run/oac-node.lock is not held")
	}
	id := s.d.Options().InstallationID
	known, err := knownNode(s.d.Host(), id)
	if err != nil {
		return workflow.Result{}, err
	}
	if c := (&Preflight{Host: s.d.Host(), InstallationID: id, NewNode: !known}).records(); c.Failed() {
		return workflow.Result{}, &Refusal{Check: c}
	}
	return workflow.Result{}, nil
}

// Steps binds every state of the install workflow: root's steps to d and
// the service-account steps to serviceSteps(d).
func Steps(d Data) map[workflow.State]workflow.Step {
	out := serviceSteps(d)
	root := map[workflow.State]workflow.Step{
		workflow.InstallPreflight:         preflightStep{d},
		workflow.InstallReadToken:         readTokenStep{d},
		workflow.InstallReadConfiguration: readConfigurationStep{d},
		workflow.InstallHostLock:          hostLockStep{d},
		workflow.InstallAccount:           accountStep{d},
		workflow.InstallGroup:             groupStep{d},
		workflow.InstallHostRecords:       hostRecordsStep{d},
		workflow.InstallEnvFile:           envFileStep{d},
		workflow.InstallUnit:              unitStep{d},
		workflow.InstallStart:             startStep{d},
		workflow.InstallSummary:           summaryStep{d: d},
	}
	maps.Copy(out, root)
	return out
}
