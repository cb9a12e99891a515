package generation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/host/microsandbox"
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
	lease       *lease.Lease

	base     *provider.Config
	identity *NodeIdentity
	roots    *trust.Roots
	spec     *release.Specification
	releases map[string]*Metadata
	client   *download.Client
	source   string
	docker   Docker
	// rootsFunc and consoleFunc, when set, build the roots and the console
	// client on first use from what the caller gave (an installation's
	// options) instead of from the node's records. Parsing the system
	// roots costs a process about 10 ms: a step that never connects
	// anywhere does not pay it.
	rootsFunc   func() (*trust.Roots, error)
	consoleFunc func() (*download.Client, string, error)
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
	node := layout.Node{Root: layout.NodeRootIn(opts.Home, opts.Identity.InstallationID)}
	root, err := safefile.OpenRoot(node.Root)
	if err != nil {
		return nil, refusal("Check that this is the node account and the installation id is right", fmt.Errorf("node root: %w", err))
	}
	if d, err := root.OpenDir(".", safefile.Expect{UID: opts.UID, Mode: 0o700}); err != nil {
		root.Close()
		return nil, refusal("", fmt.Errorf("node root: %w", err))
	} else {
		d.Close()
	}
	return &Env{opts: opts, node: node, root: root, releases: map[string]*Metadata{}}, nil
}

// Close releases the locks, the clients and the node root.
func (e *Env) Close() error {
	e.release()
	if e.client != nil {
		e.client.Close()
	}
	return e.root.Close()
}

func (e *Env) release() {
	if e.lease != nil {
		e.lease.Close()
		e.lease = nil
	}
	if e.installLock != nil {
		e.installLock.Unlock()
		e.installLock = nil
	}
}

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

// Locked implements Data.
func (e *Env) Locked() (bool, bool) { return e.installLock != nil, e.lease != nil }

func recordName(g int64, suffix string) string { return strconv.FormatInt(g, 10) + suffix }

// present reports whether a generations-directory entry exists (in any
// form, a link included).
func (e *Env) present(name string) (bool, error) {
	ok, err := safefile.Exists(filepath.Join(e.node.Generations(), name))
	if err != nil {
		return false, fmt.Errorf("check %s: %w", filepath.Join(e.node.Generations(), name), err)
	}
	return ok, nil
}

// LeaseExists implements Data.
func (e *Env) LeaseExists() (bool, error) {
	return e.present(recordName(e.opts.Identity.Generation, ".lease"))
}

// Acquire takes, without waiting, the node's install.lock and, when it
// exists, the generation's lease exclusively (validated under the lock),
// and refuses what the action may not touch: a missing lease for repair and
// collection, a dropped or collecting generation for preparation and
// repair. A refusal changed nothing. Run calls it before the engine runs.
func (e *Env) Acquire() error {
	id := e.opts.Identity
	l, err := e.root.TryLock(layout.InstallLockFile, safefile.LockOptions{
		Create: safefile.CreateIfMissing, Perm: 0o600, Expect: safefile.Expect{UID: e.opts.UID, Mode: 0o600}})
	if err != nil {
		if errors.Is(err, safefile.ErrLocked) {
			return refusal("The node program retries later", fmt.Errorf("%w (%s)", ErrInstallLocked, e.node.InstallLock()))
		}
		return refusal("", fmt.Errorf("lock %s: %w", e.node.InstallLock(), err))
	}
	e.installLock = l
	ok, err := e.LeaseExists()
	if err == nil && ok {
		err = e.openLease()
	} else if err == nil && e.opts.Action != ActionPrepare {
		err = refusal("Inspect it with `oac-node-install leases`", fmt.Errorf("%w: generation %d has no lease", lease.ErrLeaseMissing, id.Generation))
	}
	if err == nil {
		err = e.checkRecords()
	}
	if err != nil {
		e.release()
		return err
	}
	return nil
}

func (e *Env) openLease() error {
	id := e.opts.Identity
	l, err := lease.Open(e.node.Generations(), id, e.opts.UID)
	if err != nil {
		return refusal("Inspect it with `oac-node-install leases`", fmt.Errorf("lease of generation %d: %w", id.Generation, err))
	}
	if err := l.TryExclusive(); err != nil {
		l.Close()
		if errors.Is(err, lease.ErrHelperActive) {
			return refusal("A native helper or another collector holds it; the node program retries later", err)
		}
		return refusal("Inspect it with `oac-node-install leases`", err)
	}
	e.lease = l
	return nil
}

// checkRecords refuses a dropped or collecting generation for preparation
// and repair.
func (e *Env) checkRecords() error {
	if e.opts.Action == ActionCollect {
		return nil
	}
	g := e.opts.Identity.Generation
	if ok, err := e.present(recordName(g, ".dropped")); err != nil {
		return err
	} else if ok {
		return refusal("A dropped generation can never be prepared or used again", fmt.Errorf("%w: generation %d", lease.ErrDropped, g))
	}
	if ok, err := e.present(recordName(g, ".collecting")); err != nil {
		return err
	} else if ok {
		return refusal("Collection must finish first", fmt.Errorf("%w: generation %d", ErrCollecting, g))
	}
	return nil
}

// InitializeLease implements Data.
func (e *Env) InitializeLease() error {
	l, err := lease.Initialize(e.node.Generations(), e.opts.Identity, e.opts.UID)
	if err != nil {
		return err
	}
	if err := l.TryExclusive(); err != nil {
		l.Close()
		return err
	}
	e.lease = l
	return nil
}

// readPrivate reads a node file (relative to the root) with the node's
// file rules: no link, one link, the node account's, mode 0600, bounded.
func (e *Env) readPrivate(rel string, max int64) ([]byte, error) {
	return e.root.ReadFile(rel, safefile.Expect{UID: e.opts.UID, Mode: 0o600, MaxSize: max})
}

// Base implements Data.
func (e *Env) Base() (*provider.Config, error) {
	if e.base != nil {
		return e.base, nil
	}
	data, err := e.readPrivate(layout.ProviderConfigFile, provider.MaxSize)
	if err != nil {
		return nil, fmt.Errorf("base configuration: %w", err)
	}
	c, err := provider.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("base configuration %s: %w", e.node.ProviderConfig(), err)
	}
	if c.InstallationID != e.opts.Identity.InstallationID {
		return nil, fmt.Errorf("base configuration %s names installation %s", e.node.ProviderConfig(), c.InstallationID)
	}
	e.base = c
	return c, nil
}

// nodeIdentity reads state/node/identity.json once.
func (e *Env) nodeIdentity() (*NodeIdentity, error) {
	if e.identity != nil {
		return e.identity, nil
	}
	data, err := e.readPrivate(layout.NodeIdentityFile, MaxIdentitySize)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIdentity, err)
	}
	id, err := ParseNodeIdentity(data)
	if err != nil {
		return nil, err
	}
	if id.Identity.InstallationID != e.opts.Identity.InstallationID {
		return nil, fmt.Errorf("%w: it names installation %s", ErrIdentity, id.Identity.InstallationID)
	}
	// Plain http to a host that is not loopback only where the node was
	// installed with --allow-insecure-origin (CONTRACT §4.4).
	if err := provider.CheckOriginPolicy(id.CoreURL, id.AllowInsecureOrigin); err != nil {
		return nil, fmt.Errorf("%w: core_url: %w", ErrIdentity, err)
	}
	e.identity = id
	return id, nil
}

// certPool is the system roots plus the node's retained Core CA (the
// system roots loaded only for a server the CA does not verify).
func (e *Env) certPool() (*trust.Roots, error) {
	if e.roots != nil {
		return e.roots, nil
	}
	if e.rootsFunc != nil {
		roots, err := e.rootsFunc()
		if err != nil {
			return nil, err
		}
		e.roots = roots
		return roots, nil
	}
	id, err := e.nodeIdentity()
	if err != nil {
		return nil, err
	}
	var pem []byte
	if id.CoreCA != "" {
		rel, err := filepath.Rel(e.node.Root, id.CoreCA)
		if err != nil || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
			return nil, fmt.Errorf("%w: core_ca %s is not inside the node root", ErrIdentity, id.CoreCA)
		}
		if pem, err = e.readPrivate(rel, 1<<20); err != nil {
			return nil, fmt.Errorf("Core CA: %w", err)
		}
		if release.SHA256Hex(pem) != id.CoreCASHA256 {
			return nil, fmt.Errorf("%w: %s does not have the recorded core_ca_sha256", ErrIdentity, id.CoreCA)
		}
	}
	roots, err := trust.New(pem)
	if err != nil {
		return nil, fmt.Errorf("%w: %s holds no certificate", ErrIdentity, id.CoreCA)
	}
	e.roots = roots
	return roots, nil
}

// Specification implements Data.
func (e *Env) Specification(ctx context.Context) (*release.Specification, error) {
	if e.spec != nil {
		return e.spec, nil
	}
	want := e.opts.Identity
	base, err := e.Base()
	if err != nil {
		return nil, err
	}
	nid, err := e.nodeIdentity()
	if err != nil {
		return nil, err
	}
	core := e.opts.Core
	if core == nil {
		pool, err := e.certPool()
		if err != nil {
			return nil, err
		}
		if core, err = NewCoreClient(nid, pool, e.proxy()); err != nil {
			return nil, err
		}
	}
	conf, err := core.Configuration(ctx, want.Generation)
	if err != nil {
		return nil, err
	}
	switch {
	case conf.InstallationID != want.InstallationID:
		return nil, fmt.Errorf("%w: Core answered for installation %s", ErrCoreAnswer, conf.InstallationID)
	case conf.CoreURL != nid.CoreURL || provider.CoreURL(conf.CoreURL) != base.CoreURL:
		return nil, fmt.Errorf("%w: Core's public URL changed to %s; the node was installed for %s", ErrCoreAnswer, conf.CoreURL, nid.CoreURL)
	case conf.Provider != base.Provider:
		return nil, fmt.Errorf("%w: Core answered for provider %s, the node runs %s", ErrCoreAnswer, conf.Provider, base.Provider)
	case conf.Generation != want.Generation:
		return nil, fmt.Errorf("%w: Core answered generation %d, not %d", ErrCoreAnswer, conf.Generation, want.Generation)
	case conf.SpecificationDigest != want.SpecificationDigest:
		return nil, fmt.Errorf("%w: Core's specification of generation %d has digest %s, the node asked for %s", ErrSpecification, want.Generation, conf.SpecificationDigest, want.SpecificationDigest)
	}
	e.spec = conf.Specification
	return e.spec, nil
}

// proxy is the proxy snapshot of every request of the run, to the console
// and to Core: Options.Download.Proxy, or when zero the environment's.
func (e *Env) proxy() download.ProxyEnv {
	if e.opts.Download.Proxy != (download.ProxyEnv{}) {
		return e.opts.Download.Proxy
	}
	return download.ProxyEnvFromEnviron(os.Environ())
}

// console returns the console client and origin of preparation.json.
func (e *Env) console() (*download.Client, string, error) {
	if e.client != nil {
		return e.client, e.source, nil
	}
	if e.consoleFunc != nil {
		c, source, err := e.consoleFunc()
		if err != nil {
			return nil, "", err
		}
		e.client, e.source = c, source
		return c, source, nil
	}
	data, err := e.readPrivate(layout.PreparationFile, MaxPreparationSize)
	if err != nil {
		return nil, "", fmt.Errorf("preparation record: %w", err)
	}
	p, err := ParsePreparation(data)
	if err != nil {
		return nil, "", err
	}
	// The console is held to the policy recorded for the node, as Core is:
	// plain http to a host that is not loopback would let anyone on the way
	// replace the checksums together with the files.
	nid, err := e.nodeIdentity()
	if err != nil {
		return nil, "", err
	}
	if err := provider.CheckOriginPolicy(p.SourceURL, nid.AllowInsecureOrigin); err != nil {
		return nil, "", fmt.Errorf("%w: source_url: %w", ErrRecord, err)
	}
	opts := e.opts.Download
	if opts.RootCAs == nil {
		if opts.Trust, err = e.certPool(); err != nil {
			return nil, "", err
		}
	}
	opts.Proxy = e.proxy()
	c, err := download.NewClient(opts)
	if err != nil {
		return nil, "", err
	}
	e.client, e.source = c, strings.TrimRight(p.SourceURL, "/")
	return c, e.source, nil
}

func releaseURL(source, src, name string) string {
	return source + "/node-install/releases/" + src + "/" + name
}

// Release implements Data.
func (e *Env) Release(ctx context.Context, src string) (*Metadata, error) {
	if md, ok := e.releases[src]; ok {
		return md, nil
	}
	if !release.IsCommit(src) {
		return nil, fmt.Errorf("release %q is not a source commit", src)
	}
	base, err := e.Base()
	if err != nil {
		return nil, err
	}
	c, source, err := e.console()
	if err != nil {
		return nil, err
	}
	m, err := c.FetchMetadata(ctx, releaseURL(source, src, release.ManifestName), release.MaxMetadataSize)
	if err != nil {
		return nil, artifactErr(err)
	}
	s, err := c.FetchMetadata(ctx, releaseURL(source, src, release.SumsName), release.MaxMetadataSize)
	if err != nil {
		return nil, artifactErr(err)
	}
	r, err := release.VerifyRelease(m, s, base.Provider)
	if err != nil {
		return nil, artifactErr(fmt.Errorf("release %s from %s: %w", src, source, err))
	}
	if r.Manifest.SourceCommit != src {
		return nil, artifactErr(fmt.Errorf("release %s from %s: its manifest names source commit %s", src, source, r.Manifest.SourceCommit))
	}
	md := &Metadata{Release: r, Manifest: m, Sums: s}
	e.releases[src] = md
	return md, nil
}

// FetchReleaseFile implements Data.
func (e *Env) FetchReleaseFile(ctx context.Context, src, name string) ([]byte, error) {
	c, source, err := e.console()
	if err != nil {
		return nil, err
	}
	data, err := c.FetchMetadata(ctx, releaseURL(source, src, name), release.MaxMetadataSize)
	if err != nil {
		return nil, artifactErr(err)
	}
	return data, nil
}

// Download implements Data: req.URL is set to the artifact's versioned
// console URL, so downloads stay pinned to the release even if the
// console's current release changes meanwhile.
func (e *Env) Download(ctx context.Context, src string, req download.Request) error {
	c, source, err := e.console()
	if err != nil {
		return err
	}
	if req.URL == "" {
		return fmt.Errorf("download %s: no released file name", req.Target)
	}
	req.URL = release.ArtifactURL(release.ConsoleArtifactBaseURL(source, src), req.URL)
	if req.Progress == nil && e.opts.Progress != nil {
		name, rerr := filepath.Rel(e.node.Root, req.Target)
		if rerr != nil {
			name = filepath.Base(req.Target)
		}
		report := e.opts.Progress
		req.Progress = func(done, total int64) { report(name, done, total) }
	}
	err = c.Download(ctx, req)
	if errors.Is(err, download.ErrTransfer) {
		return artifactErr(err)
	}
	return err
}

// Docker implements Data.
func (e *Env) Docker(ctx context.Context) (Docker, error) {
	if e.docker != nil {
		return e.docker, nil
	}
	base, err := e.Base()
	if err != nil {
		return nil, err
	}
	if base.Docker == nil || e.opts.Docker == nil {
		return nil, fmt.Errorf("this node has no Docker Engine configured")
	}
	d, err := e.opts.Docker(ctx, base.Docker.Host)
	if err != nil {
		return nil, fmt.Errorf("connect to the Docker Engine %s: %w", base.Docker.Host, err)
	}
	e.docker = d
	return d, nil
}

// Microsandbox implements Data. Every msb process inherits the held
// install.lock, so that a helper killed during a load or a removal leaves
// the node locked until msb is done: the rerun's Verify never sees a load
// or removal half done.
func (e *Env) Microsandbox(msb, store, firmware string) Microsandbox {
	if e.opts.Microsandbox != nil {
		return e.opts.Microsandbox(msb, store, firmware)
	}
	return &microsandbox.CLI{MSB: msb, Store: store, Firmware: firmware, Inherit: e.heldLocks()}
}

// heldLocks are the lock files this run holds that the processes its steps
// start must inherit.
func (e *Env) heldLocks() []*os.File {
	if e.installLock == nil {
		return nil
	}
	return []*os.File{e.installLock.File()}
}
