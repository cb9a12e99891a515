package noderoot

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// Actions of the generation helper.
const (
	ActionPrepare = "prepare"
	ActionRepair  = "repair"
	ActionCollect = "collect"
)

// Options describe one helper run.
type Options struct {
	// Action is ActionPrepare, ActionRepair or ActionCollect.
	Action string
	// Identity is the generation: installation, generation number and
	// specification digest.
	Identity lease.Identity
	// Home is the node account's home; the node root is
	// layout.NodeRootIn(Home, installation).
	Home string
	// UID is the node account; every file of the node must be its.
	UID int
	// Docker connects to the engine a configuration names (its docker.host).
	// Required for Docker nodes.
	Docker func(ctx context.Context, host string) (Docker, error)
	// Microsandbox drives msb for one store; nil runs the store's msb
	// through microsandbox.CLI.
	Microsandbox func(msb, store, firmware string) Microsandbox
	// Core reads Core's configuration; nil reads it over HTTPS with the
	// credential of state/node/identity.json.
	Core ConfigurationReader
	// Download shapes the console client. When RootCAs is nil the system
	// roots plus the node's retained Core CA (if any) are used; a zero
	// Proxy is taken from the environment.
	Download download.Options
	// Log receives progress lines (nil: discarded).
	Log io.Writer
	// Progress, when set, is told each download's progress: the file
	// relative to the node root, its bytes held and its size.
	Progress func(name string, done, total int64)
}

// Env is the real Data of a helper run: the node root opened safely, the
// locks it holds, and lazily built clients and cached answers. It is used
// by one goroutine.
type Env struct {
	opts Options
	node layout.Node
	root *safefile.Root

	installLock *safefile.FileLock
	// sharedLock is an install.lock the caller holds (ShareInstallLock).
	sharedLock *safefile.FileLock
	lease      *lease.Lease

	base     *provider.Config
	identity *NodeIdentity
	roots    *trust.Roots
	spec     *release.Specification
	releases map[string]*Metadata
	client   *download.Client
	source   string
	docker   Docker
	// bound: Bind gave the roots (preset, taken on first use) and the
	// console origin, which the node's records give otherwise.
	bound  bool
	preset *trust.Roots
}

// NewEnv checks the options and opens the node root (owned by the node
// account, mode 0700). It takes no lock; Run does. The caller closes it.
func NewEnv(opts Options) (*Env, error) {
	switch opts.Action {
	case ActionPrepare, ActionRepair, ActionCollect:
	default:
		return nil, fmt.Errorf("generation helper: unknown action %q", opts.Action)
	}
	if err := opts.Identity.Validate(); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(opts.Home) {
		return nil, fmt.Errorf("generation helper: home %q is not an absolute path", opts.Home)
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	e, opened, err := open(opts)
	if err != nil && !opened {
		return nil, Refusal("Check that this is the node account and the installation id is right", err)
	}
	if err != nil {
		return nil, Refusal("", err)
	}
	return e, nil
}

// Open opens the node root of opts as NewEnv does, for a run whose action
// NewEnv does not run (an installation's): the identity must be valid, and
// the node root the node account's, mode 0700, reached through no link. Its
// errors are not refusals. It takes no lock. The caller closes it.
func Open(opts Options) (*Env, error) {
	if err := opts.Identity.Validate(); err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	e, _, err := open(opts)
	return e, err
}

// open opens the node root; opened reports whether the root was opened
// and only its owner or mode refused.
func open(opts Options) (e *Env, opened bool, err error) {
	node := layout.Node{Root: layout.NodeRootIn(opts.Home, opts.Identity.InstallationID)}
	root, err := safefile.OpenRoot(node.Root)
	if err != nil {
		return nil, false, fmt.Errorf("node root: %w", err)
	}
	if d, err := root.OpenDir(".", safefile.Expect{UID: opts.UID, Mode: 0o700}); err != nil {
		root.Close()
		return nil, true, fmt.Errorf("node root: %w", err)
	} else {
		d.Close()
	}
	return &Env{opts: opts, node: node, root: root, releases: map[string]*Metadata{}}, true, nil
}

// Preset is what an installation knows before the node root holds the
// records an Env otherwise reads it from.
type Preset struct {
	// Specification is Core's specification of the enrolled generation.
	Specification *release.Specification
	// Base is the base configuration the installation writes.
	Base *provider.Config
	// Roots are the roots Core and the console are trusted with (the
	// operator's CA, or the system roots).
	Roots *trust.Roots
	// Source is the console origin, without a trailing slash.
	Source string
}

// Bind makes e answer from p instead of the node's records: Specification,
// Base, CertPool and Console's origin. It is called once, before the first
// step runs.
func (e *Env) Bind(p Preset) {
	e.spec, e.base, e.preset, e.source = p.Specification, p.Base, p.Roots, p.Source
	e.bound = true
}

// Close releases the locks, the clients and the node root.
func (e *Env) Close() error {
	e.Unlock()
	if e.client != nil {
		e.client.Close()
	}
	return e.root.Close()
}

// Action is the run's action (Options.Action).
func (e *Env) Action() string { return e.opts.Action }

// Identity implements Data.
func (e *Env) Identity() lease.Identity { return e.opts.Identity }

// Node implements Data.
func (e *Env) Node() layout.Node { return e.node }

// Root implements Data.
func (e *Env) Root() *safefile.Root { return e.root }

// Home implements Data.
func (e *Env) Home() string { return e.opts.Home }

// UID implements Data.
func (e *Env) UID() int { return e.opts.UID }

// Logf implements Data.
func (e *Env) Logf(format string, args ...any) { fmt.Fprintf(e.opts.Log, format+"\n", args...) }

// RecordName is generation g's entry of the generations directory with
// suffix (".lease", ".json", ".preparing", ".collecting", ".dropped").
func RecordName(g int64, suffix string) string { return strconv.FormatInt(g, 10) + suffix }

// Present reports whether a generations-directory entry exists (in any
// form, a link included).
func (e *Env) Present(name string) (bool, error) {
	ok, err := safefile.Exists(filepath.Join(e.node.Generations(), name))
	if err != nil {
		return false, fmt.Errorf("check %s: %w", filepath.Join(e.node.Generations(), name), err)
	}
	return ok, nil
}

// ReadPrivate reads a node file (relative to the root) with the node's
// file rules: no link, one link, the node account's, mode 0600, bounded.
func (e *Env) ReadPrivate(rel string, max int64) ([]byte, error) {
	return e.root.ReadFile(rel, safefile.Expect{UID: e.opts.UID, Mode: 0o600, MaxSize: max})
}
