package install

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/journal"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// JournalPath is root's install journal of an installation.
func JournalPath(h layout.Host, id ident.InstallationID) string {
	return filepath.Join(h.JournalDir(id), "install.journal")
}

// inspectRefusal refuses to start over from a journal of another
// installer that stopped in an Inspect state, naming it as status does.
func inspectRefusal(path string, old *workflow.Report, version string) error {
	by := "another installer"
	if old.Binding != nil && old.Binding.Version != "" {
		by = "oac-node-install " + old.Binding.Version
	}
	step := string(old.State)
	if old.Pending != nil {
		step = old.Pending.Step
	}
	note := "it leaves a state only an operator may judge"
	if old.Note != "" {
		note = old.Note
	}
	return fmt.Errorf("the installation's journal %s, written by %s, stopped in step %q (%s); this installer (%s) does not start over from it. Inspect it with `oac-node-install status` and `oac-node-install leases`",
		path, by, step, note, version)
}

// keepFinished moves a journal whose run ended aside, so the rerun starts
// a new run; kept says it did.
func keepFinished(path string) (kept bool, err error) {
	rep, err := workflow.InspectJournal(path, workflow.Lookup)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil || rep.Condition != workflow.Complete {
		return false, nil // the engine decides about it
	}
	if err := journal.KeepAside(path); err != nil {
		return false, err
	}
	return true, nil
}
