package install

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// ActionInstall is the service-account part of an installation: the node
// root, its records and verified downloads, the retained helper, the
// enrolled generation's lease, the Runtime image, the Docker network,
// provider.json and the registration with Core. Its steps (nodeSteps)
// run in one privilege-separated child of the root installer's run
// (asaccount.Children).
const ActionInstall = "install"

// NodeOptions describe the service-account part of one installation run.
// Root validated every field before the child started; the child checks
// them again where it relies on them.
type NodeOptions struct {
	InstallationID ident.InstallationID
	// Home is the node account's home; UID the node account.
	Home string
	UID  int
	// SourceURL is the console origin the node's files come from, and
	// that preparation.json names for later generations.
	SourceURL string
	// Bundle is the absolute directory of an offline bundle (--bundle) the
	// installation's files are copied from instead; "" downloads them.
	Bundle string
	// CoreOrigin is Core's public URL as the command gave it.
	CoreOrigin          string
	AllowInsecureOrigin bool
	// CoreCA is the operator's CA bundle (PEM) given with --core-ca; empty
	// when Core and the console use the system roots.
	CoreCA []byte
	// UnlabelledNetwork accepts the platform's installer's network
	// without labels as the installation's (Input.UnlabelledNetwork).
	UnlabelledNetwork bool
	// PlatformNode replaces the platform's generation-preparer.pyz with
	// this installer's launcher (Input.PlatformNode).
	PlatformNode bool
	// Configuration is Core's configuration answer root validated.
	Configuration *core.Configuration
	// Docker connects to the Docker Engine at host.
	Docker func(ctx context.Context, host string) (noderoot.Docker, error)
	// Microsandbox drives msb for one store (nil: the real CLI).
	Microsandbox func(msb, store, firmware string) noderoot.Microsandbox
	// Download shapes the console client; RootCAs and Proxy are filled in
	// when zero (system roots plus CoreCA; the process environment).
	Download download.Options
	// Helper returns the installer's own bytes, which become the retained
	// generation helper. They are read only (the child's are the sealed
	// copy, mapped read-only) and valid while the step runs.
	Helper func() ([]byte, error)
	// Register runs the node program's registration (nil: the node root's
	// native/bin/oac-node).
	Register Registrar
	// Resolve resolves Core's host for the microsandbox network policy
	// (nil: the system resolver).
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Log receives progress lines (nil: discarded).
	Log io.Writer
	// Progress, when set, is told each download's progress (Options).
	Progress func(name string, done, total int64)
	// Lock holds install.lock across the requests of one child (nil: each
	// request takes and releases its own).
	Lock *InstallLock
}

// NodeEnv is the Data of an installation's service-account steps: a
// generation Env bound to the enrolled generation, whose base
// configuration is the one the installation writes (provider.json), plus
// what only an installation does.
type NodeEnv struct {
	*noderoot.Env
	in      NodeOptions
	spec    *release.Specification // Core's specification of the enrolled generation
	base    *provider.Config       // the provider.json the installation writes
	source  string                 // the console origin, no trailing slash
	current *noderoot.Metadata
	token   string
}

// SetToken hands the run's enrollment token to the register step. It is
// kept in memory only.
func (e *NodeEnv) SetToken(token string) { e.token = token }

// NodeRootDirs are the directories of a new node root, in creation order,
// relative to the account's home.
func nodeRootDirs(id ident.InstallationID) []string {
	root := layout.NodeRel(id)
	return []string{
		layout.OacDir, layout.NodesRel, root,
		filepath.Join(root, layout.StateParentDir), filepath.Join(root, layout.NodeStateDir), filepath.Join(root, layout.GenerationsDir),
		filepath.Join(root, layout.NativeDir), filepath.Join(root, layout.NativeBinDir),
		filepath.Join(root, layout.RuntimeDir), filepath.Join(root, layout.ImagesDir), filepath.Join(root, layout.JournalsDir),
	}
}

// EnsureNodeRoot creates the missing directories of the node root under
// home (0700, the node account's) and checks the existing ones: never a
// link, never another owner's. The home itself must be the account's.
func EnsureNodeRoot(home string, installationID ident.InstallationID, uid int) error {
	h, err := safefile.OpenRoot(home)
	if err != nil {
		return fmt.Errorf("home %s: %w", home, err)
	}
	defer h.Close()
	if d, err := h.OpenDir(".", safefile.Expect{UID: uid}); err != nil {
		return fmt.Errorf("home %s: %w", home, err)
	} else {
		d.Close()
	}
	for _, rel := range nodeRootDirs(installationID) {
		if err := h.Mkdir(rel, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		d, err := h.OpenDir(rel, safefile.Expect{UID: uid, Mode: 0o700})
		if err != nil {
			return err
		}
		d.Close()
	}
	return nil
}

// CheckNodeRoot is EnsureNodeRoot's check without its changes: every
// directory of the node root that exists is a directory of the account's,
// mode 0700, reached through no link; one that is not refuses, so that a
// rerun says so before anything is written. Missing directories are no
// error (the node_root step makes them).
func CheckNodeRoot(home string, installationID ident.InstallationID, uid int) error {
	h, err := safefile.OpenRoot(home)
	if errors.Is(err, os.ErrNotExist) {
		return nil // the run makes the home again before its first step as the account
	}
	if err != nil {
		return noderoot.Refusal("The service account's home is not as the installer left it; inspect it", fmt.Errorf("home %s: %w", home, err))
	}
	defer h.Close()
	for _, rel := range nodeRootDirs(installationID) {
		d, err := h.OpenDir(rel, safefile.Expect{UID: uid, Mode: 0o700})
		if errors.Is(err, os.ErrNotExist) {
			return nil // and everything below it is missing too
		}
		if err != nil {
			return noderoot.Refusal("The node root is not as the installer left it (a link, another owner or another mode); inspect it", err)
		}
		d.Close()
	}
	return nil
}

// NewNodeEnv opens the node root (EnsureNodeRoot made it) for the
// installation's steps. The caller closes it.
func NewNodeEnv(ctx context.Context, in NodeOptions) (*NodeEnv, error) {
	conf := in.Configuration
	if conf == nil {
		return nil, errors.New("installation: no Core configuration")
	}
	if conf.InstallationID != in.InstallationID {
		return nil, fmt.Errorf("%w: Core answered for installation %s", core.ErrAnswer, conf.InstallationID)
	}
	if !filepath.IsAbs(in.Home) {
		return nil, fmt.Errorf("installation: home %q is not an absolute path", in.Home)
	}
	if _, err := provider.CheckOrigin(in.SourceURL); err != nil {
		return nil, fmt.Errorf("installation: source URL: %w", err)
	}
	if in.Bundle != "" && !filepath.IsAbs(in.Bundle) {
		return nil, fmt.Errorf("installation: bundle %q is not an absolute path", in.Bundle)
	}
	if in.Log == nil {
		in.Log = io.Discard
	}
	opts := noderoot.Options{
		Action: ActionInstall,
		Identity: lease.Identity{
			InstallationID:      in.InstallationID,
			Generation:          conf.Generation,
			SpecificationDigest: conf.SpecificationDigest,
		},
		Home:         in.Home,
		UID:          in.UID,
		Docker:       in.Docker,
		Microsandbox: in.Microsandbox,
		Download:     in.Download,
		Log:          in.Log,
		Progress:     in.Progress,
	}
	env, err := noderoot.Open(opts)
	if err != nil {
		return nil, err
	}
	e := &NodeEnv{Env: env, in: in, spec: conf.Specification}
	// The operator's CA and the proxy settings are checked now; the
	// system roots and the client are built when a step first needs them
	// (CertPool, Console).
	roots, err := trust.New(in.CoreCA)
	if err != nil {
		e.Close()
		return nil, errCoreCA
	}
	check := in.Download
	if check.Proxy == (proxy.Env{}) {
		check.Proxy = proxy.FromEnviron(os.Environ())
	}
	if check.RootCAs == nil {
		check.RootCAs = x509.NewCertPool()
	}
	c, err := download.NewClient(check)
	if err != nil {
		e.Close()
		return nil, err
	}
	c.Close()
	e.source = noderoot.TrimOrigin(in.SourceURL)
	addrs, err := e.coreAddrs(ctx)
	if err != nil {
		e.Close()
		return nil, err
	}
	base, err := provider.Base(provider.BaseInput{
		InstallationID: in.InstallationID, CoreOrigin: in.CoreOrigin, Generation: conf.Generation,
		Specification: conf.Specification, Root: e.Node().Root, Home: in.Home,
		Image: conf.Specification.Runtime.ImageID, CoreAddrs: addrs,
	})
	if err != nil {
		e.Close()
		return nil, err
	}
	e.base = base
	e.Bind(noderoot.Preset{Specification: e.spec, Base: base, Roots: roots, Source: e.source})
	return e, nil
}

var errCoreCA = errors.New("the Core CA file holds no PEM certificate")

// coreAddrs resolves Core's origin for the microsandbox network policy;
// Docker nodes need none.
func (e *NodeEnv) coreAddrs(ctx context.Context) ([]netip.AddrPort, error) {
	if e.in.Configuration.Provider != release.ProviderMicrosandbox {
		return nil, nil
	}
	u, err := url.Parse(e.in.CoreOrigin)
	if err != nil {
		return nil, fmt.Errorf("Core URL: %w", err)
	}
	port := u.Port()
	if port == "" {
		port = "443"
		if u.Scheme == "http" {
			port = "80"
		}
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("Core URL port %q: %w", port, err)
	}
	resolve := e.in.Resolve
	if resolve == nil {
		resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = resolve(ctx, host); err != nil {
		return nil, fmt.Errorf("resolve Core's host %s: %w", host, err)
	}
	out := make([]netip.AddrPort, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, netip.AddrPortFrom(a.Unmap(), uint16(p)))
	}
	return out, nil
}

// Install returns the options the environment was built from.
func (e *NodeEnv) Install() NodeOptions { return e.in }

// CurrentRelease is the verified metadata of the console's current
// release, whose node program the installation runs.
func (e *NodeEnv) CurrentRelease(ctx context.Context) (*noderoot.Metadata, error) {
	if e.current != nil {
		return e.current, nil
	}
	if e.in.Bundle != "" {
		return e.bundleCurrent()
	}
	client, source, err := e.Console()
	if err != nil {
		return nil, err
	}
	m, err := client.FetchMetadata(ctx, source+"/node-install/"+release.ManifestName, release.MaxMetadataSize)
	if err != nil {
		return nil, noderoot.Artifact(err)
	}
	s, err := client.FetchMetadata(ctx, source+"/node-install/"+release.SumsName, release.MaxMetadataSize)
	if err != nil {
		return nil, noderoot.Artifact(err)
	}
	r, err := release.VerifyRelease(m, s, e.base.Provider)
	if err != nil {
		return nil, noderoot.Artifact(fmt.Errorf("the console's current release at %s: %w", e.source, err))
	}
	md := &noderoot.Metadata{Release: r, Manifest: m, Sums: s}
	e.current = md
	e.KeepRelease(md)
	return md, nil
}

// writeRecord publishes a node record (indented JSON with sorted keys and a
// newline, mode 0600). A record holding the same value in another layout
// (the platform's programs write one line) is left as it is. replace
// allows a different value to replace the record (an unregistered node's
// disposable state); otherwise a different value is ErrConflict.
func (e *NodeEnv) writeRecord(rel string, v map[string]any, replace bool) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if replace {
		if old, err := e.ReadPrivate(rel, noderoot.MaxRecordSize); err != nil || !noderoot.SameRecord(old, data) {
			return e.Root().AtomicWrite(rel, data, 0o600)
		}
	}
	if err := noderoot.PublishRecord(e.Root(), rel, data, 0o600); err != nil {
		if errors.Is(err, safefile.ErrConflict) {
			return fmt.Errorf("%w: %w", noderoot.ErrConflict, err)
		}
		return err
	}
	return nil
}

// Registered reports whether registered.json exists: once it does, no node
// file is replaced.
func (e *NodeEnv) Registered() (bool, error) {
	return safefile.Exists(e.Node().Registered())
}

// Facts the installation's service-account steps record.
const (
	factSourceCommit = "source_commit" // the selected Runtime release
	factNodeRelease  = "node_release"  // the console release of the node program
	factWarm         = "warm_image"    // "true": the image was already held; no archive was fetched
	factNetwork      = "network"
)

// recordState compares a node record's value with what writeRecord would
// write.
func (e *NodeEnv) recordState(rel string, v map[string]any) (noderoot.FileState, error) {
	want, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return 0, err
	}
	got, err := e.ReadPrivate(rel, noderoot.MaxRecordSize)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return noderoot.FileMissing, nil
	case err != nil:
		return 0, err
	case !noderoot.SameRecord(got, want):
		return 0, fmt.Errorf("%w: %s differs from what this command computes", noderoot.ErrConflict, rel)
	}
	return noderoot.FileOK, nil
}
