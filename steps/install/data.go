package install

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Options are the install command's flags, validated by the command line.
type Options struct {
	InstallationID ident.InstallationID
	SourceURL      string // console origin
	// Bundle is the offline bundle's absolute directory (--bundle), which
	// the node's files are copied from instead of SourceURL; "" for none.
	Bundle  string
	CoreURL string // Core origin
	// Provider is the --provider assertion ("" when not given).
	Provider            string
	AllowInsecureOrigin bool
	// CoreCA is the operator's CA bundle read from --core-ca (PEM); nil
	// when not given.
	CoreCA []byte
}

// Data is what root's install steps see of the run (kubeadm's data.go):
// the options, the host, Core's configuration as it was read before the
// engine ran, and the host adapters.
type Data interface {
	// ChildInput and Child serve the service-account steps.
	asaccount.Data
	// Token is the enrollment token read from standard input ("" when the
	// node is registered).
	Token() string
	Options() Options
	Host() layout.Host
	// Configuration is Core's validated configuration of this run.
	Configuration() *core.Configuration
	// Bookkeeping opens the installer's bbolt database (created 0600);
	// the caller closes it.
	Bookkeeping() (*bookkeeping.DB, error)
	Accounts() accounts.Adapter
	Databases() accounts.Databases
	Systemd() systemd.Manager
	// Proxy is the command's proxy variables, for the env file.
	Proxy() proxy.Env
	// HostLocked reports whether the command holds /run/oac-node.lock.
	HostLocked() bool
	// Printf reports progress to the operator.
	Printf(format string, args ...any)
	// SummaryStyle marks up the summary (plain when zero).
	SummaryStyle() SummaryStyle
}

// Env is the real Data.
type Env struct {
	Opts      Options
	HostPaths layout.Host
	Conf      *core.Configuration
	ConfRaw   json.RawMessage
	Tok       string
	Adapter   accounts.Adapter
	DBs       accounts.Databases
	Manager   systemd.Manager
	ProxyEnv  proxy.Env
	Runner    asaccount.Runner
	Out       io.Writer
	Locked    bool
	Style     SummaryStyle
	// UnlabelledNetwork: the installation's Docker network is the
	// platform's installer's, made without labels (Input).
	UnlabelledNetwork bool
	// PlatformNode: the platform's installer made the node (a takeover
	// recorded it, or is about to): its generation-preparer.pyz is the
	// platform's installer, replaced by this installer's launcher (Input).
	PlatformNode bool

	// checks is the service-account child's answer to the check of every
	// service-account step (NodeChecks).
	checks    map[string]NodeCheck
	checksErr error
}

func (e *Env) Options() Options                   { return e.Opts }
func (e *Env) Host() layout.Host                  { return e.HostPaths }
func (e *Env) Configuration() *core.Configuration { return e.Conf }
func (e *Env) Accounts() accounts.Adapter         { return e.Adapter }
func (e *Env) Databases() accounts.Databases      { return e.DBs }
func (e *Env) Systemd() systemd.Manager           { return e.Manager }
func (e *Env) Proxy() proxy.Env                   { return e.ProxyEnv }
func (e *Env) Token() string                      { return e.Tok }

func (e *Env) Printf(format string, args ...any) {
	if e.Out != nil {
		fmt.Fprintf(e.Out, format+"\n", args...)
	}
}

func (e *Env) Bookkeeping() (*bookkeeping.DB, error) {
	return bookkeeping.Open(e.HostPaths.Bookkeeping())
}

// nodeInput is the installation's input to the child: the run's options
// and Core's configuration, without the token.
func (e *Env) nodeInput() Input {
	return Input{
		InstallationID: e.Opts.InstallationID, SourceURL: e.Opts.SourceURL, Bundle: e.Opts.Bundle, CoreOrigin: e.Opts.CoreURL,
		AllowInsecureOrigin: e.Opts.AllowInsecureOrigin, CoreCA: e.Opts.CoreCA, Configuration: e.ConfRaw,
		UnlabelledNetwork: e.UnlabelledNetwork, PlatformNode: e.PlatformNode,
	}
}

// ChildInput implements asaccount.Data: the installation's input, with the
// enrollment token only for the register step's run.
func (e *Env) ChildInput(state workflow.State, verify bool) any {
	in := e.nodeInput()
	if state == workflow.InstallRegister && !verify {
		in.Token = e.Tok
	}
	return in
}

// SummaryStyle implements Data.
func (e *Env) SummaryStyle() SummaryStyle { return e.Style }

// HostLocked implements Data.
func (e *Env) HostLocked() bool { return e.Locked }
