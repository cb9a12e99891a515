package install

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Check is one preflight check with its outcome: Err is nil when it
// passed; Hint says what to do about a failure. Skipped, when set, says why
// the check did not run (a check it depends on failed, or what it needs is
// not at hand); a skipped check neither passed nor failed.
type Check struct {
	Name    string
	Err     error
	Hint    string
	Skipped string
	// Warning is what a passed check found that the operator should
	// know (`check` shows it; it fails nothing).
	Warning string
}

// Failed reports whether the check failed.
func (c Check) Failed() bool { return c.Err != nil }

// skip is the check named name, not run because of why.
func skip(name, why string) Check { return Check{Name: name, Skipped: why} }

// Refusal is a failed preflight check as the command reports it: the
// failure and the hint. It is a refusal before any change: it unwraps to a
// workflow.Refusal (the command that prints it says that nothing was
// changed), and through it to the check's error.
type Refusal struct{ Check Check }

func (r *Refusal) Error() string {
	msg := r.Check.Err.Error()
	if r.Check.Hint != "" {
		msg += ". " + r.Check.Hint
	}
	return msg
}

func (r *Refusal) Unwrap() error { return &workflow.Refusal{Err: r.Check.Err} }

// FirstRefusal returns the first failed check as a *Refusal, or nil.
func FirstRefusal(checks []Check) error {
	for _, c := range checks {
		if c.Failed() {
			return &Refusal{Check: c}
		}
	}
	return nil
}

// Engine is the part of the Docker Engine preflight reads.
type Engine interface {
	Info(ctx context.Context) (docker.HostInfo, error)
	NetworkInspect(ctx context.Context, name string) (docker.Network, error)
}

// Preflight is the read-only host inspection before an installation
// changes anything. Every path is below Host.Root, so tests inspect a
// host of their own.
type Preflight struct {
	Host           layout.Host
	InstallationID ident.InstallationID
	Provider       string // docker or microsandbox
	// NewNode is set when the host has no record of this installation.
	NewNode bool
	// Takeover is set when the platform's installer's account.json is
	// this installation's and agrees with the host (FindTakeover): the
	// install takes the node over instead of refusing the host.
	Takeover bool
	// CPUs and MemoryMiB are what one sandbox needs (the specification's
	// resources).
	CPUs      int64
	MemoryMiB int64
	// Engine is the Docker Engine (Docker nodes).
	Engine Engine
	// Environ is the command's environment (os.Environ()).
	Environ []string
	// Machine is uname's machine ("x86_64").
	Machine string
	// HostCPUs and HostMemoryMiB are the host's, for microsandbox nodes.
	HostCPUs      int
	HostMemoryMiB int64

	// NoEngine, when set, says why the checks that ask the Docker Engine
	// are skipped (the check command without root); install never sets it.
	NoEngine string
	// NoSize, when set, says why the capacity check is skipped: CPUs and
	// MemoryMiB are unknown (the check command has no token to read Core's
	// specification with); install never sets it.
	NoSize string
}

// Run runs every check, the host's and then the provider's, and returns
// them in order; it never changes the host. A check whose prerequisite
// failed is returned skipped. The install command refuses with the first
// failure (FirstRefusal); the check command prints them all.
func (p *Preflight) Run(ctx context.Context) []Check {
	return append(p.HostChecks(), p.ProviderChecks(ctx, p.Provider)...)
}

// HostChecks are the checks of the host whatever its provider: platform,
// systemd, SELinux, the token's absence from the environment, the host's
// records and the older product's traces.
func (p *Preflight) HostChecks() []Check {
	return append(p.LockFreeChecks(), p.RecordChecks()...)
}

// LockFreeChecks are the host checks that read nothing of the host's
// records (platform, systemd, SELinux, the token's absence from the
// environment): install runs them before it reads the token and before it
// takes the host lock (CONTRACT §10).
func (p *Preflight) LockFreeChecks() []Check {
	return []Check{p.platform(), p.systemd(), p.selinux(), p.tokenEnv()}
}

// RecordChecks are the host checks that read the host's records (one Core
// per host, the original installer's records, the older product's traces,
// $SUDO_USER's node root): install runs them under the host lock.
func (p *Preflight) RecordChecks() []Check {
	return []Check{p.records(), p.olderProduct(), p.sudoUserNode()}
}

// ProviderChecks are the checks of provider's prerequisites on this host
// (docker or microsandbox), capacity for one sandbox included.
func (p *Preflight) ProviderChecks(ctx context.Context, provider string) []Check {
	switch provider {
	case release.ProviderDocker:
		return p.dockerChecks(ctx)
	case release.ProviderMicrosandbox:
		return []Check{p.kvm(), p.storePath(), p.capacity(p.HostCPUs, p.HostMemoryMiB)}
	}
	return []Check{{Name: "provider", Err: fmt.Errorf("provider %q is not a node provider", provider), Hint: "Use docker or microsandbox"}}
}

func (p *Preflight) path(rel ...string) string {
	return filepath.Join(append([]string{p.Host.Root}, rel...)...)
}

func (p *Preflight) platform() Check {
	c := Check{Name: "platform linux/amd64"}
	if p.Machine != "x86_64" && p.Machine != "amd64" {
		c.Err, c.Hint = fmt.Errorf("this host is %s; nodes run on linux/amd64 only", p.Machine), "Use an x86_64 Linux host"
	}
	return c
}

func (p *Preflight) systemd() Check {
	c := Check{Name: CheckSystemdName}
	if fi, err := os.Stat(p.path("run/systemd/system")); err != nil || !fi.IsDir() {
		c.Err, c.Hint = errors.New("systemd is not running on this host"), "Nodes run as systemd services; use a host booted with systemd"
	}
	return c
}

// CheckSystemdVersionName is the check that the host's systemd loads the
// node's unit.
const CheckSystemdVersionName = "systemd version"

// SystemdVersionCheck asks the manager for its version and fails when it
// is older than the node's unit needs (systemd.MinVersion), naming both.
func SystemdVersionCheck(ctx context.Context, m systemd.Versioned) Check {
	c := Check{Name: CheckSystemdVersionName}
	v, err := systemd.CheckVersion(ctx, m)
	switch {
	case errors.Is(err, systemd.ErrTooOld):
		c.Err, c.Hint = err, fmt.Sprintf("Use a host with systemd %d or later", systemd.MinVersion)
	case err != nil:
		c.Err = err
	default:
		c.Name = CheckSystemdVersionName + " " + v
	}
	return c
}

func (p *Preflight) selinux() Check {
	c := Check{Name: "SELinux not enforcing"}
	data, err := os.ReadFile(p.path("sys/fs/selinux/enforce"))
	if err == nil && strings.TrimSpace(string(data)) == "1" {
		c.Err, c.Hint = errors.New("SELinux is enforcing"), "Nodes are not supported with SELinux enforcing"
	}
	return c
}

func (p *Preflight) tokenEnv() Check {
	c := Check{Name: "no enrollment token in the environment"}
	for _, kv := range p.Environ {
		if strings.HasPrefix(kv, "OAC_ENROLLMENT_TOKEN=") {
			c.Err, c.Hint = errors.New("the environment holds OAC_ENROLLMENT_TOKEN"), "Unset it; the token is read only from standard input"
		}
	}
	return c
}

// recordName reports whether name is a host record's, <id>.json with a
// canonical installation id.
func recordName(name string) bool {
	id, ok := strings.CutSuffix(name, ".json")
	return ok && ident.CanonicalUUID(id)
}

// records checks one Core per host and the original installer's records.
func (p *Preflight) records() Check {
	c := Check{Name: "one Core per host"}
	dir := p.Host.EtcDir()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return c
	}
	if err != nil {
		c.Err = fmt.Errorf("read %s: %w", dir, err)
		return c
	}
	db := false
	for _, e := range entries {
		if e.Name() == "installer.db" {
			db = true
		}
	}
	for _, e := range entries {
		switch {
		case e.Name() == "account.json" && !db && !p.Takeover:
			c.Err, c.Hint = fmt.Errorf("%s holds the original installer's account.json and no installer.db", dir), "This installer takes over that node when its records agree with the host (a rerun of its command, or --uninstall)"
			return c
		case recordName(e.Name()) && e.Name() != layout.RecordName(p.InstallationID) && p.NewNode:
			c.Err, c.Hint = fmt.Errorf("this host is a node of another Core (installation %s)", strings.TrimSuffix(e.Name(), ".json")), "A host serves one Core; uninstall that node first"
			return c
		}
	}
	return c
}

// olderProduct refuses the platform's previous name's traces of this
// installation; they are never adopted or removed.
func (p *Preflight) olderProduct() Check {
	c := Check{Name: "no older product installation"}
	for _, q := range []string{
		p.path("etc/systemd/system", "parsar-node-"+p.InstallationID.String()+".service"),
		p.path("etc/parsar-node", p.InstallationID.String()+".json"),
	} {
		if _, err := os.Lstat(q); err == nil {
			c.Err, c.Hint = fmt.Errorf("%s exists: this installation was set up by the platform's previous installer", q), "Remove that node with the installer that made it"
			return c
		}
	}
	// In the account's home, which the account can change: looked at
	// through no symbolic link.
	rel := filepath.Join(".parsar", "nodes", p.InstallationID.String())
	home, err := safefile.OpenRoot(p.Host.Home())
	if err != nil {
		if errors.Is(err, safefile.ErrUnsafe) {
			c.Err = err
		}
		return c // no home, or one this process cannot look into (check without root)
	}
	defer home.Close()
	switch ok, err := home.Exists(rel); {
	case errors.Is(err, safefile.ErrUnsafe):
		c.Err = err
	case ok:
		c.Err, c.Hint = fmt.Errorf("%s exists: this installation was set up by the platform's previous installer", home.Join(rel)), "Remove that node with the installer that made it"
	}
	return c
}

// Names of the Docker checks that depend on an earlier one.
const (
	checkDockerLimits  = "Docker CPU and memory limits"
	checkCapacity      = "capacity for one sandbox"
	checkDockerNetwork = "no Docker network of this installation"
)

func (p *Preflight) dockerChecks(ctx context.Context) []Check {
	sock := Check{Name: "Docker socket"}
	path := p.path("var/run/docker.sock")
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		sock.Err, sock.Hint = fmt.Errorf("Docker is not installed or not running (%s: %v)", path, err), "Install Docker and run `sudo systemctl enable --now docker`"
		return append([]Check{sock}, p.skipEngine(0, "the Docker socket check failed")...)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		sock.Err = fmt.Errorf("%s is not a socket", path)
		return append([]Check{sock}, p.skipEngine(0, "the Docker socket check failed")...)
	}
	if c := p.deviceGroup(&sock, path, st, "docker"); c.Failed() {
		return append([]Check{c}, p.skipEngine(0, "the Docker socket check failed")...)
	}
	if p.NoEngine != "" {
		return append([]Check{sock}, p.skipEngine(0, p.NoEngine)...)
	}
	info := Check{Name: checkDockerLimits}
	hi, err := p.Engine.Info(ctx)
	switch {
	case err != nil:
		info.Err, info.Hint = fmt.Errorf("the Docker Engine does not answer: %v", err), "Run `sudo systemctl enable --now docker`"
		return append([]Check{sock, info}, p.skipEngine(1, "the Docker Engine does not answer")...)
	case hi.Rootless:
		info.Err, info.Hint = errors.New("rootless Docker is not supported"), "Use the system Docker Engine"
	case !hi.MemoryLimit || !hi.CPUCfsQuota:
		info.Err, info.Hint = errors.New("the Docker Engine cannot limit containers' CPU and memory"), "Enable the cgroup v2 controllers (cpu, memory) for Docker"
	}
	checks := []Check{sock, info, p.capacity(hi.NCPU, hi.MemTotal>>20)}
	if p.NewNode {
		nc := Check{Name: checkDockerNetwork}
		name := "oac-node-" + p.InstallationID.String()
		if _, err := p.Engine.NetworkInspect(ctx, name); err == nil {
			nc.Err, nc.Hint = fmt.Errorf("the Docker network %s exists: another node of this installation uses this engine", name), "Remove that node first"
		} else if !errors.Is(err, docker.ErrNotFound) {
			nc.Err = fmt.Errorf("inspect the Docker network %s: %v", name, err)
		}
		checks = append(checks, nc)
	}
	return checks
}

// skipEngine returns the Docker checks that ask the engine, from the
// from'th on, each skipped because of why.
func (p *Preflight) skipEngine(from int, why string) []Check {
	names := []string{checkDockerLimits, checkCapacity}
	if p.NewNode {
		names = append(names, checkDockerNetwork)
	}
	var checks []Check
	for _, n := range names[from:] {
		checks = append(checks, skip(n, why))
	}
	return checks
}

// deviceGroup checks that path is group read-write for group want (not
// root's group).
func (p *Preflight) deviceGroup(c *Check, path string, st syscall.Stat_t, want string) Check {
	out := *c
	g, err := accounts.Under(p.Host.Root).LookupGroupID(int(st.Gid))
	switch {
	case st.Gid == 0:
		out.Err, out.Hint = fmt.Errorf("%s belongs to group root", path), fmt.Sprintf("Its group must be %s", want)
	case st.Mode&0o060 != 0o060:
		out.Err, out.Hint = fmt.Errorf("%s is not group read-write", path), fmt.Sprintf("Make it mode 0660 with group %s", want)
	case err != nil:
		out.Err = fmt.Errorf("group of %s: %v", path, err)
	case g.Name != want:
		out.Err, out.Hint = fmt.Errorf("%s belongs to group %s", path, g.Name), fmt.Sprintf("The device group must be %s", want)
	}
	return out
}

func (p *Preflight) kvm() Check {
	c := Check{Name: "KVM"}
	path := p.path("dev/kvm")
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFCHR {
		c.Err, c.Hint = errors.New("KVM is not available on this host"), "microsandbox needs /dev/kvm; enable virtualization"
		return c
	}
	if st.Mode&0o006 == 0o006 {
		return c
	}
	return p.deviceGroup(&c, path, st, "kvm")
}

func (p *Preflight) storePath() Check {
	c := Check{Name: "microsandbox store path"}
	if _, err := provider.StorePath(p.Host.Home(), p.InstallationID); err != nil {
		c.Err, c.Hint = err, "The account's home must be short enough for the store's socket paths"
	}
	return c
}

func (p *Preflight) capacity(cpus int, memMiB int64) Check {
	c := Check{Name: checkCapacity}
	if p.NoSize != "" {
		c.Skipped = fmt.Sprintf("%s (this host has %d CPUs and %d MiB of memory)", p.NoSize, cpus, memMiB)
		return c
	}
	if int64(cpus) < p.CPUs || memMiB < p.MemoryMiB {
		c.Err = fmt.Errorf("this host has %d CPUs and %d MiB of memory; each sandbox needs %d CPUs and %d MiB", cpus, memMiB, p.CPUs, p.MemoryMiB)
		c.Hint = "Use a larger host or ask for smaller sandboxes in Web"
	}
	return c
}

// preflightStep records the preflight's outcome.
type preflightStep struct{ d Data }

func (s preflightStep) Run(context.Context, workflow.Facts) (workflow.Result, error) {
	return workflow.Result{}, nil
}

func (s preflightStep) Check(ctx context.Context, f workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	res, err := s.Run(ctx, f)
	return done, res, err
}

// hostCapacity is the host's CPUs and memory (MiB) from the kernel.
func hostCapacity() (int, int64) {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0, 0
	}
	var set unix.CPUSet
	cpus := 0
	if unix.SchedGetaffinity(0, &set) == nil {
		cpus = set.Count()
	}
	return cpus, int64(si.Totalram) * int64(si.Unit) >> 20
}
