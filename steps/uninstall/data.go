package uninstall

import (
	"context"
	"fmt"
	"io"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Options are the uninstall command's flags.
type Options struct {
	InstallationID ident.InstallationID
	Force          bool
}

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
	// Runner runs the service-account steps (Child).
	Runner asaccount.Runner
	// EndChild, when set, ends the service-account child (endChild).
	EndChild func() error
	Running  Processes
	Out      io.Writer
	// UnlabelledNetwork: the bookkeeping records (or a takeover is about
	// to record) the Docker network as the platform's installer's, made
	// without labels (Input.UnlabelledNetwork).
	UnlabelledNetwork bool
	// precheck is the Core check Run made before the journal existed.
	precheck *workflow.Result
	// final is the run's facts as the last step saw them.
	final map[string]string
}

// Printf reports progress to the operator.
func (e *Env) Printf(format string, args ...any) {
	if e.Out != nil {
		fmt.Fprintf(e.Out, format+"\n", args...)
	}
}

// printer is where the steps' lines for the operator go (Out, or nowhere).
func (e *Env) printer() io.Writer {
	if e.Out == nil {
		return io.Discard
	}
	return e.Out
}

// Bookkeeping opens the installer's database; the caller closes it.
func (e *Env) Bookkeeping() (*bookkeeping.DB, error) {
	return bookkeeping.Open(e.HostPaths.Bookkeeping())
}

// ChildInput implements asaccount.Data: the uninstallation's input, the
// same for every step.
func (e *Env) ChildInput(workflow.State, bool) any {
	return Input{
		InstallationID: e.Opts.InstallationID, Provider: e.Inst.Provider, CoreURL: e.Inst.CoreURL,
		AllowInsecureOrigin: e.Inst.AllowInsecureOrigin, CoreCASHA256: e.Inst.CoreCA, Force: e.Opts.Force,
		Registered: e.Registered, UnlabelledNetwork: e.UnlabelledNetwork,
	}
}

// Child implements asaccount.Data.
func (e *Env) Child() asaccount.Runner { return e.Runner }

// endChild ends the service-account child of the run, if one runs: no
// process of the account's is then left by this run.
func (e *Env) endChild() error {
	if e.EndChild == nil {
		return nil
	}
	return e.EndChild()
}

// Networks is the part of the Docker Engine the uninstall's
// network step uses. The real docker.Client implements it.
type Networks interface {
	NetworkInspect(ctx context.Context, name string) (docker.Network, error)
	NetworkRemove(ctx context.Context, name string) error
	ContainersByLabel(ctx context.Context, key, value string) ([]docker.Container, error)
}

// NodeOptions describe the service-account side of one uninstall
// step.
type NodeOptions struct {
	// Home is the node account's home; UID the node account.
	Home   string
	UID    int
	Docker func(ctx context.Context, host string) (Networks, error)
	// Proxy is the proxy snapshot for the request to Core.
	Proxy proxy.Env
	// Log receives progress lines (nil: discarded).
	Log io.Writer
}

func (o NodeOptions) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

func (o NodeOptions) nodeRoot(id ident.InstallationID) string { return layout.NodeRootIn(o.Home, id) }

// openNodeRoot opens the node root of id beneath the home, through no
// symbolic link (the home's subdirectories are the service account's to
// replace).
func (o NodeOptions) openNodeRoot(id ident.InstallationID) (*safefile.Root, error) {
	return safefile.OpenRootIn(o.Home, layout.NodeRel(id), safefile.Expect{UID: safefile.AnyUID})
}
