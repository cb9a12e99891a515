package layout

import (
	"fmt"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

// Fixed names of the service account and its home.
const (
	Account = "oac-node"
	HomeRel = "var/lib/oac-node"
)

// Host is the set of host paths under one root.
type Host struct{ Root string }

// Default is the real host.
var Default = Host{Root: "/"}

func (h Host) p(rel ...string) string {
	return filepath.Join(append([]string{h.Root}, rel...)...)
}

// EtcDir is /etc/oac-node (root, 0755): host records and bookkeeping.
func (h Host) EtcDir() string { return h.p("etc/oac-node") }

// Bookkeeping is the installer's bbolt database (root, 0600).
func (h Host) Bookkeeping() string { return h.p("etc/oac-node/installer.db") }

// Record is /etc/oac-node/<id>.json, the host's list of nodes.
func (h Host) Record(id ident.InstallationID) string { return h.p("etc/oac-node", RecordName(id)) }

// RecordName is the host record's name in EtcDir, <id>.json.
func RecordName(id ident.InstallationID) string { return string(id) + ".json" }

// EnvFile holds the latest run's proxy settings for the unit (root, 0600).
func (h Host) EnvFile(id ident.InstallationID) string { return h.p("etc/oac-node", string(id)+".env") }

// Unit is the node's systemd unit file.
func (h Host) Unit(id ident.InstallationID) string {
	return h.p("etc/systemd/system", UnitName(id))
}

// UnitName is the node's systemd unit name.
func UnitName(id ident.InstallationID) string { return "oac-node-" + string(id) + ".service" }

// JournalDir holds root's workflow journals (install, uninstall), one
// directory per installation; root-owned 0700, outside the service account's
// home so root never follows what that account can write.
func (h Host) JournalDir(id ident.InstallationID) string {
	return h.p("var/lib/oac-node-install", string(id))
}

// JournalsRoot is the parent of every installation's root journal directory.
func (h Host) JournalsRoot() string { return h.p("var/lib/oac-node-install") }

// Command is /usr/local/sbin/oac-node-install (root, 0755): the root-owned
// copy of the installer the last install run left on the host, which the
// help's `sudo oac-node-install status` names.
func (h Host) Command() string { return h.p("usr/local/sbin/oac-node-install") }

// HostLock is /run/oac-node.lock, serializing installs and uninstalls.
func (h Host) HostLock() string { return h.p("run/oac-node.lock") }

// DockerConfig is the empty root-owned DOCKER_CONFIG for service-account
// docker calls.
func (h Host) DockerConfig() string { return h.p("run/oac-node-docker") }

// Home is the service account's home.
func (h Host) Home() string { return h.p(HomeRel) }

// NodeRoot is the node's root in the service account's home.
func (h Host) NodeRoot(id ident.InstallationID) string { return NodeRootIn(h.Home(), id) }

// Names in the service account's home, relative to it.
const (
	// OacDir holds the node roots and the microsandbox stores.
	OacDir = ".oac"
	// NodesRel holds every node root: .oac/nodes/<id>.
	NodesRel = OacDir + "/nodes"
	// MicrosandboxStoresRel holds the microsandbox stores: .oac/m/<hash>.
	MicrosandboxStoresRel = OacDir + "/m"
)

// NodeRel is the node root of installation id relative to the home.
func NodeRel(id ident.InstallationID) string { return filepath.Join(NodesRel, string(id)) }

// NodesDir holds every node root of the service account.
func (h Host) NodesDir() string { return filepath.Join(h.Home(), NodesRel) }

// NodeRootIn is the node root for installation id under home.
func NodeRootIn(home string, id ident.InstallationID) string { return filepath.Join(home, NodeRel(id)) }

// Names in a node root, relative to it (CONTRACT §3). Node joins them to
// the root; code that opened the root (a safefile.Root) uses them as they
// are.
const (
	InstallLockFile      = "install.lock"
	InstallationFile     = "installation.json"
	RegisteredFile       = "registered.json"
	ProviderConfigFile   = "provider.json"
	RuntimeArtifactsFile = "runtime-artifacts.json"
	PreparationFile      = "preparation.json"
	// HelperFile is the retained generation helper, beside provider.json.
	HelperFile = "generation-preparer"
	// HelperLauncherFile is the Python zip application through which the
	// platform's node program runs HelperFile (CONTRACT §11); its
	// presence (0600) puts the node program in multi-generation mode.
	HelperLauncherFile = "generation-preparer.pyz"
	// CoreCAFile is the node's private copy of the operator's Core CA.
	CoreCAFile = "core-ca.pem"
	// StateParentDir holds NodeStateDir, the node program's state
	// directory, whose identity record is IdentityFileName.
	StateParentDir   = "state"
	NodeStateDir     = StateParentDir + "/node"
	IdentityFileName = "identity.json"
	NodeIdentityFile = NodeStateDir + "/" + IdentityFileName
	// GenerationsDir holds the generation leases and their records.
	GenerationsDir = NodeStateDir + "/generations"
	NativeDir      = "native"
	NativeBinDir   = NativeDir + "/bin"
	RuntimeDir     = "runtime"
	ImagesDir      = "images"
	JournalsDir    = "journals"
	// ReleasesDir holds the per-release Runtime files of later
	// generations: releases/<source_commit>.
	ReleasesDir = "releases"
)

// Node is the layout inside one node root (CONTRACT §3).
type Node struct{ Root string }

func (n Node) p(rel ...string) string {
	return filepath.Join(append([]string{n.Root}, rel...)...)
}

func (n Node) InstallLock() string       { return n.p(InstallLockFile) }
func (n Node) Installation() string      { return n.p(InstallationFile) }
func (n Node) Registered() string        { return n.p(RegisteredFile) }
func (n Node) ProviderConfig() string    { return n.p(ProviderConfigFile) }
func (n Node) RuntimeArtifacts() string  { return n.p(RuntimeArtifactsFile) }
func (n Node) Preparation() string       { return n.p(PreparationFile) }
func (n Node) Helper() string            { return n.p(HelperFile) }
func (n Node) HelperLauncher() string    { return n.p(HelperLauncherFile) }
func (n Node) StateDir() string          { return n.p(NodeStateDir) }
func (n Node) Identity() string          { return n.p(NodeIdentityFile) }
func (n Node) Generations() string       { return n.p(GenerationsDir) }
func (n Node) Journals() string          { return n.p(JournalsDir) }
func (n Node) Release(src string) string { return n.p(ReleasesDir, src) }
func (n Node) CoreCA() string            { return n.p(CoreCAFile) }

// GenerationJournal is the journal of a generation workflow (prepare,
// repair, collect) for generation g: <root>/journals/<workflow>-<g>.journal.
func (n Node) GenerationJournal(workflow string, g int64) string {
	return n.p(JournalsDir, fmt.Sprintf("%s-%d.journal", workflow, g))
}
