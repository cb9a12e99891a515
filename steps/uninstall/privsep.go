package uninstall

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/openagentcore/oac-node-install/steps/generation"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"golang.org/x/sys/unix"
)

// PrivsepChild is the real ChildRunner: each request runs in a new child
// as the service account (generation.UninstallRole), from the binary
// captured at start. Without base.Progress, the child's progress lines
// go to base.Output.
func PrivsepChild(base privsep.Options, dbs accounts.Databases) ChildRunner {
	return func(ctx context.Context, req generation.UninstallStepRequest) (generation.UninstallStepResult, error) {
		o := base
		u, err := dbs.LookupUser(layout.Account)
		if err != nil {
			return generation.UninstallStepResult{}, fmt.Errorf("the service account: %w", err)
		}
		groups, err := dbs.SupplementaryGroups(layout.Account)
		if err != nil {
			return generation.UninstallStepResult{}, fmt.Errorf("the service account's groups: %w", err)
		}
		o.UID, o.GID, o.Groups = u.UID, u.GID, groups
		o.Role, o.Request = generation.UninstallRole, req
		if o.Progress == nil && o.Output != nil {
			// The child's progress lines (kept networks and stores, with
			// their removal commands) are the operator's.
			o.Progress = func(ev privsep.Event) { fmt.Fprintln(o.Output, ev.Text) }
		}
		r, err := privsep.Run(ctx, o)
		if err != nil {
			return generation.UninstallStepResult{}, err
		}
		var res generation.UninstallStepResult
		if err := r.Decode(&res); err != nil {
			return generation.UninstallStepResult{}, err
		}
		return res, nil
	}
}

// ProcRunning reports whether a process under procfs (normally /proc)
// runs with the real uid uid.
func ProcRunning(procfs string) Processes {
	return func(uid int) (bool, error) {
		entries, err := os.ReadDir(procfs)
		if err != nil {
			return false, fmt.Errorf("list processes: %w", err)
		}
		for _, ent := range entries {
			if _, err := strconv.Atoi(ent.Name()); err != nil {
				continue
			}
			var st unix.Stat_t
			if unix.Stat(procfs+"/"+ent.Name(), &st) != nil {
				continue // ended meanwhile
			}
			if int(st.Uid) == uid {
				return true, nil
			}
		}
		return false, nil
	}
}
