package install

import (
	"context"
	"errors"

	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// groupStep adds the account to the provider's device group (docker or
// kvm, nothing else), recording the addition before usermod runs.
type groupStep struct{ d Data }

func (s groupStep) group() string {
	if s.d.Configuration().Provider == "microsandbox" {
		return "kvm"
	}
	return "docker"
}

func (s groupStep) member() (bool, error) {
	names, err := s.d.Databases().GroupNames(layout.Account)
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if n == s.group() {
			return true, nil
		}
	}
	return false, nil
}

func (s groupStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	in, err := s.member()
	if err != nil {
		return workflow.Result{}, err
	}
	if in {
		return workflow.Result{}, s.d.Databases().Sync() // an earlier run's usermod may not be durable
	}
	db, err := openBookkeeping(s.d)
	if err != nil {
		return workflow.Result{}, err
	}
	defer db.Close()
	if err := db.AddGroup(s.group()); err != nil {
		return workflow.Result{}, err
	}
	s.d.Printf("add %s to the group %s", layout.Account, s.group())
	return workflow.Result{}, s.d.Accounts().AddToGroup(ctx, s.group())
}

// Verify: the account is in the group (done) or not (not done).
func (s groupStep) Verify(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	in, err := s.member()
	switch {
	case err != nil:
		return workflow.Unknown, workflow.Result{}, err
	case in:
		if err := s.d.Databases().Sync(); err != nil { // an earlier run's usermod may not be durable
			return workflow.Unknown, workflow.Result{}, err
		}
		return workflow.Done, workflow.Result{}, nil
	}
	return workflow.NotDone, workflow.Result{}, nil
}

// Check is Verify's member test.
func (s groupStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	in, err := s.member()
	if errors.Is(err, accounts.ErrNotFound) || (err == nil && !in) {
		return notDone, workflow.Result{}, nil
	}
	return done, workflow.Result{}, err
}
