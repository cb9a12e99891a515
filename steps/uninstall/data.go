package uninstall

import (
	"context"
	"fmt"
	"io"
	"maps"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/generation"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// Options are the uninstall command's flags.
type Options struct {
	InstallationID string
	Force          bool
}

// ChildRunner runs one service-account step in a child. The real one is
// PrivsepChild; tests may run generation.RunUninstallStep in process.
type ChildRunner func(ctx context.Context, req generation.UninstallStepRequest) (generation.UninstallStepResult, error)

// Processes reports whether a process runs as uid (the real one reads
// /proc).
type Processes func(uid int) (bool, error)

// Env is what root's uninstall steps see of the run.
type Env struct {
	Opts      Options
	HostPaths layout.Host
	// Inst is the installation as root's records hold it (from the
	// bookkeeping, else the host record); with --force and no record, the
	// installation id alone.
	Inst bookkeeping.Installation
	// Registered is root's record that the node registered with Core
	// (install.Registered), decided under the host lock.
	Registered bool
	Adapter    accounts.Adapter
	DBs        accounts.Databases
	Manager    systemd.Manager
	Runner     ChildRunner
	Running    Processes
	Out        io.Writer
	// precheck is the Core check Run made before the journal existed.
	precheck *generation.UninstallStepResult
	// final is the run's facts as the last step saw them.
	final map[string]string
}

// Printf reports progress to the operator.
func (e *Env) Printf(format string, args ...any) {
	if e.Out != nil {
		fmt.Fprintf(e.Out, format+"\n", args...)
	}
}

// Bookkeeping opens the installer's database; the caller closes it.
func (e *Env) Bookkeeping() (*bookkeeping.DB, error) {
	return bookkeeping.Open(e.HostPaths.Bookkeeping())
}

// request is the child's request for step with the run's facts.
func (e *Env) request(step string, facts map[string]string) generation.UninstallStepRequest {
	return generation.UninstallStepRequest{
		Step: step, Facts: maps.Clone(facts), InstallationID: e.Opts.InstallationID, Provider: e.Inst.Provider,
		CoreURL: e.Inst.CoreURL, AllowInsecureOrigin: e.Inst.AllowInsecureOrigin, CoreCASHA256: e.Inst.CoreCA, Force: e.Opts.Force,
		Registered: e.Registered,
	}
}
