package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Every step of the install workflow is a workflow.Checker: before a run
// writes anything, install.Run asks each whether its effect is already on
// the host. A check reads only: the bookkeeping read-only, files, the
// accounts, systemd's unit state and, in one service-account child, the
// node's files, the engine and Core.

var (
	done    = workflow.Done
	notDone = workflow.NotDone
)

// readBookkeeping opens the bookkeeping read-only; ok is false when it
// does not exist yet.
func readBookkeeping(h layout.Host) (db *bookkeeping.DB, ok bool, err error) {
	db, err = bookkeeping.OpenReadOnly(h.Bookkeeping())
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return db, true, nil
}

// recordsFile reports whether the bookkeeping lists path for id.
func recordsFile(db *bookkeeping.DB, id ident.InstallationID, path string) bool {
	files, err := db.Files(id)
	if err != nil {
		return false
	}
	for _, f := range files {
		if f.Path == path {
			return true
		}
	}
	return false
}

// checkWritten is done when the root-owned file path holds text and the
// bookkeeping records it as the installation's.
func checkWritten(h layout.Host, id ident.InstallationID, path string, text []byte) (workflow.Outcome, workflow.Result, error) {
	if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, text) {
		return notDone, workflow.Result{}, nil
	}
	db, ok, err := readBookkeeping(h)
	if err != nil || !ok {
		return notDone, workflow.Result{}, err
	}
	defer db.Close()
	if !recordsFile(db, id, path) {
		return notDone, workflow.Result{}, nil
	}
	return done, workflow.Result{}, nil
}

// NodeChecks implements nodeChecker: the first call asks one child to
// check every service-account step; later calls return its answer, or the
// answer of the child that read a registered node's configuration
// (setNodeChecks). That child checked before root's steps did, without
// their facts; but no check of a service-account step reads a fact of
// root's steps (each reads only what the earlier service-account steps
// reported), so its answer is the one a child asked here would give.
func (e *Env) NodeChecks(ctx context.Context, facts workflow.Facts) (map[string]NodeCheck, error) {
	if e.checks != nil || e.checksErr != nil {
		return e.checks, e.checksErr
	}
	e.setNodeChecks(nil)
	if _, err := e.DBs.LookupUser(layout.Account); errors.Is(err, accounts.ErrNotFound) {
		return e.checks, nil
	} else if err != nil {
		e.checksErr = err
		return nil, err
	}
	req, err := childRequest(StepCheck, facts, e.nodeInput())
	if err != nil {
		e.checksErr = err
		return nil, err
	}
	a, err := e.Runner(ctx, req)
	if err != nil {
		e.checksErr = asaccount.StepErr(err)
		return nil, e.checksErr
	}
	var out Output
	if err := a.DecodeOutput(&out); err != nil {
		e.checksErr = err
		return nil, err
	}
	e.setNodeChecks(out.Checks)
	return e.checks, nil
}

// setNodeChecks records a child's answer to the check of every
// service-account step.
func (e *Env) setNodeChecks(checks []NodeCheck) {
	e.checks = map[string]NodeCheck{}
	for _, c := range checks {
		e.checks[c.Step] = c
	}
}

// serviceStep runs a service-account state's step in the child
// (asaccount.Step), and checks it with the answer of the one child that
// checks them all (Check).
type serviceStep struct{ asaccount.Step }

// nodeChecker is what checks every service-account step in one child (Env
// implements it).
type nodeChecker interface {
	NodeChecks(ctx context.Context, facts workflow.Facts) (map[string]NodeCheck, error)
}

// Check implements workflow.Checker with the answer of one child for all
// service-account steps; without an account, nothing of the node exists
// yet (not done).
func (s serviceStep) Check(ctx context.Context, facts workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	nc, ok := s.D.(nodeChecker)
	if !ok {
		return notDone, workflow.Result{}, nil
	}
	checks, err := nc.NodeChecks(ctx, facts)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	c, ok := checks[string(s.State)]
	if !ok || c.Outcome != workflow.Done {
		return notDone, workflow.Result{}, nil
	}
	return done, workflow.Result{Event: c.Event, Facts: c.Facts}, nil
}

// StepCheck asks the child to check, without changing anything, every
// service-account step of the installation in order (workflow.Checker):
// one child answers for all of them.
const StepCheck = "check"

// NodeCheck is one step's answer to StepCheck.
type NodeCheck struct {
	Step    string            `json:"step"`
	Outcome workflow.Outcome  `json:"outcome"`
	Event   workflow.Event    `json:"event,omitempty"`
	Facts   map[string]string `json:"facts,omitempty"`
}

// CheckNodeSteps checks the service-account steps in the install
// workflow's order, each seeing the facts the earlier ones reported. A
// node root that does not exist yet leaves every step unchecked (not
// done). It writes nothing; a refusal is returned as the step's error.
func CheckNodeSteps(ctx context.Context, in NodeOptions, runFacts map[string]string) ([]NodeCheck, error) {
	if err := CheckNodeRoot(in.Home, in.InstallationID, in.UID); err != nil {
		return nil, err
	}
	e, err := NewNodeEnv(ctx, in)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer e.Close()
	// A helper at work would change what is checked: its install.lock,
	// when it exists, is taken now and kept for the steps (InstallLock).
	if in.Lock != nil {
		if err := in.Lock.take(e, false); err != nil {
			return nil, err
		}
	}
	steps := nodeSteps(e)
	facts := workflow.Facts(maps.Clone(runFacts))
	if facts == nil {
		facts = workflow.Facts{}
	}
	var out []NodeCheck
	for _, sd := range workflow.InstallDefinition().States {
		st, ok := steps[sd.Name]
		if !ok {
			continue
		}
		c := NodeCheck{Step: string(sd.Name), Outcome: workflow.NotDone}
		if ck, ok := st.(workflow.Checker); ok {
			o, res, err := ck.Check(ctx, maps.Clone(facts))
			if err != nil {
				return nil, fmt.Errorf("check %s: %w", sd.Name, err)
			}
			if o == workflow.Done {
				c.Outcome, c.Event, c.Facts = o, res.Event, res.Facts
				maps.Copy(facts, res.Facts)
			}
		}
		out = append(out, c)
	}
	return out, nil
}
