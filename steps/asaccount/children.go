package asaccount

import (
	"context"
	"fmt"
	"slices"

	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// Children is the real Runner (Run): the steps of a run share one child, a
// privsep.Session of Role started from the binary root captured at start,
// while the account's uid, gid and groups are those it started with. They
// are looked up in dbs at every call (install's account step creates the
// account during the run, its group step adds it to a group); when they
// differ, the session ends and a new one starts. Close ends the last one:
// whoever runs the workflow calls it before the host lock is released, so
// no process of the account's is left behind by the run, and before a
// step that needs none of the account's processes to run (uninstall's
// account step).
type Children struct {
	base privsep.Options
	dbs  accounts.Databases

	session *privsep.Session
	creds   string // the session's uid, gid and groups
}

// NewChildren returns the Children of base (its UID, GID, Groups, Role and
// Request unused). Without base.Progress, the child's progress lines go to
// base.Output, one a line.
func NewChildren(base privsep.Options, dbs accounts.Databases) *Children {
	if base.Progress == nil && base.Output != nil {
		out := base.Output
		base.Progress = func(ev privsep.Event) { fmt.Fprintln(out, ev.Text) }
	}
	return &Children{base: base, dbs: dbs}
}

// Run runs one request in the session's child, starting the session first
// when none runs with the account's present credentials.
func (c *Children) Run(ctx context.Context, req Request) (Answer, error) {
	u, err := c.dbs.LookupUser(layout.Account)
	if err != nil {
		return Answer{}, fmt.Errorf("the service account: %w", err)
	}
	groups, err := c.dbs.SupplementaryGroups(layout.Account)
	if err != nil {
		return Answer{}, fmt.Errorf("the service account's groups: %w", err)
	}
	groups = slices.Sorted(slices.Values(groups))
	creds := fmt.Sprint(u.UID, u.GID, groups)
	if c.session != nil && c.creds != creds {
		if err := c.Close(); err != nil {
			return Answer{}, err
		}
	}
	if c.session == nil {
		o := c.base
		o.UID, o.GID, o.Groups = u.UID, u.GID, groups
		o.Role, o.Request = Role, nil
		if c.session, err = privsep.Start(ctx, o); err != nil {
			return Answer{}, err
		}
		c.creds = creds
	}
	r, err := c.session.Call(ctx, req)
	if err != nil {
		return Answer{}, err
	}
	var a Answer
	if err := r.Decode(&a); err != nil {
		return Answer{}, err
	}
	return a, nil
}

// Close ends the session's child, if one runs. The next Run starts a new
// one.
func (c *Children) Close() error {
	if c.session == nil {
		return nil
	}
	err := c.session.Close()
	c.session = nil
	return err
}
