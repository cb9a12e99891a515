package install

import (
	"context"
	"errors"
	"slices"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"

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

// member reports whether /etc/group lists the account in the group, and
// done whether the step has nothing left to do: it does and /etc/gshadow
// agrees, or the installer did not add it (ours reports whether the
// bookkeeping records the addition). A usermod cut off between its
// renames of /etc/group and /etc/gshadow (a full /etc) leaves the first
// listing it and the second not: the step runs usermod again, which
// completes gshadow.
func (s groupStep) member(db *bookkeeping.DB) (in, done bool, err error) {
	names, err := s.d.Databases().GroupNames(layout.Account)
	if err != nil {
		return false, false, err
	}
	if !slices.Contains(names, s.group()) {
		return false, false, nil
	}
	g, err := s.d.Databases().GshadowOf(layout.Account)
	if err != nil || g.Member(s.group()) || db == nil {
		return true, err == nil, err
	}
	groups, err := db.Groups()
	if err != nil {
		return true, false, err
	}
	ours := slices.ContainsFunc(groups, func(r bookkeeping.Group) bool { return r.Name == s.group() })
	return true, !ours, nil
}

func (s groupStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	db, err := openBookkeeping(s.d)
	if err != nil {
		return workflow.Result{}, err
	}
	defer db.Close()
	in, complete, err := s.member(db)
	switch {
	case err != nil:
		return workflow.Result{}, err
	case complete:
		return workflow.Result{}, s.d.Databases().Sync() // an earlier run's usermod may not be durable
	case in:
		s.d.Printf("finish adding %s to the group %s (/etc/gshadow does not list it yet)", layout.Account, s.group())
		return workflow.Result{}, s.d.Accounts().AddToGroup(ctx, s.group())
	}
	if err := db.AddGroup(s.group()); err != nil {
		return workflow.Result{}, err
	}
	s.d.Printf("add %s to the group %s", layout.Account, s.group())
	return workflow.Result{}, s.d.Accounts().AddToGroup(ctx, s.group())
}

// Verify: the account is in the group (done, once an earlier usermod's
// gshadow change is completed) or not (not done).
func (s groupStep) Verify(ctx context.Context, facts workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	in, _, err := s.member(nil)
	switch {
	case err != nil:
		return workflow.Unknown, workflow.Result{}, err
	case in:
		res, err := s.Run(ctx, facts)
		if err != nil {
			return workflow.Unknown, workflow.Result{}, err
		}
		return workflow.Done, res, nil
	}
	return workflow.NotDone, workflow.Result{}, nil
}

// Check is Verify's member test, read-only.
func (s groupStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	db, ok, err := readBookkeeping(s.d.Host())
	if err != nil {
		return 0, workflow.Result{}, err
	}
	if ok {
		defer db.Close()
	}
	in, complete, err := s.member(db)
	if errors.Is(err, accounts.ErrNotFound) || (err == nil && !(in && complete)) {
		return notDone, workflow.Result{}, nil
	}
	return done, workflow.Result{}, err
}
