package status

import (
	"path/filepath"
	"time"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Format is the format version every JSON document of status and leases
// carries in its "format" field. A change that removes or renames a field,
// or changes its meaning, increments it.
const Format = 1

// Document is `status --json` (CONTRACT §10): {"format":1,
// "installations":[…]}, every list [] when empty, never null.
type Document struct {
	Format        int            `json:"format"`
	Installations []Installation `json:"installations"`
	// Command is the installer's copy on the host
	// (/usr/local/sbin/oac-node-install) as the bookkeeping records it;
	// absent when none is recorded.
	Command *bookkeeping.Command `json:"command,omitempty"`
}

// NeedsAttention reports whether an installation of the document needs
// attention: status then exits 2.
func (d Document) NeedsAttention() bool {
	for _, s := range d.Installations {
		if s.Condition == ConditionAttention {
			return true
		}
	}
	return false
}

// LeasesDocument is `leases --json`.
type LeasesDocument struct {
	Format int          `json:"format"`
	Nodes  []NodeLeases `json:"nodes"`
}

// Installation conditions.
const (
	ConditionOK        = "ok"
	ConditionAttention = "needs-attention"
	// ConditionRunning: a workflow of the installation is running (a live
	// process holds its journal's lock) and nothing else needs attention.
	ConditionRunning = "running"
)

// Installation is one installation: its workflow journals, root's first,
// what root's records, systemd, the node root and Core say of it, its
// node root's leases, and whether it needs attention.
type Installation struct {
	InstallationID ident.InstallationID `json:"installation_id"`
	// Condition is "ok", "needs-attention" or "running".
	Condition string `json:"condition"`
	// Next is, when the installation needs attention, the one command to run
	// or thing to check next.
	Next string `json:"next,omitempty"`
	// Uninstalled is set once an uninstallation completed and the node
	// was not installed again.
	Uninstalled bool             `json:"uninstalled,omitempty"`
	Workflows   []WorkflowStatus `json:"workflows"`
	// Bookkeeping is what installer.db records (read-only).
	Bookkeeping *BookkeepingStatus `json:"bookkeeping"`
	// Unit is systemd's view of the node's unit; absent once uninstalled.
	Unit *UnitStatus `json:"unit,omitempty"`
	// RootRecord is what root's own records say of the node's
	// registration: the node id root recorded in its install journal when
	// Core answered the node's credential. A fleet tool decides whether a
	// host needs an enrollment token, and which node it removes in Core,
	// from this object only.
	RootRecord *RootRecord `json:"root_record,omitempty"`
	// Registration and Core are read as the service account; absent when
	// the host has no node root for the installation. They are the
	// account's claims (Registration.Source "account"): the account
	// writes the files they come from and can name any node in them.
	Registration *Registration `json:"registration,omitempty"`
	Core         *CoreView     `json:"core,omitempty"`
	// Node is the node root's leases; absent when the host has no node root
	// for the installation.
	Node *NodeLeases `json:"node,omitempty"`
	// Made is what the installer made for the installation besides what
	// the bookkeeping lists; absent once uninstalled.
	Made *Made `json:"made,omitempty"`

	record    *hostrecord.Record
	recordErr error
	// homeMissing: the service account exists (the recorded one) but its
	// home, where every node root lives, does not.
	homeMissing bool
}

// Sources of a status object: root's own records, or the service
// account's claims.
const (
	SourceRoot    = "root"
	SourceAccount = "account"
)

// RootRecord is an installation's registration as root recorded it.
type RootRecord struct {
	// Source is always "root".
	Source string `json:"source"`
	// NodeID is the node id root recorded in its install journal once Core
	// confirmed, to the node's credential, that it knows the node; ""
	// when root recorded none.
	NodeID string `json:"node_id,omitempty"`
	// Registered: root recorded a node id and the installation is not
	// uninstalled since.
	Registered bool `json:"registered"`
	// Journal is root's journal the node id comes from.
	Journal string `json:"journal,omitempty"`
}

// Made is where an installation's state lives on the host — the service
// account's home, the node root, root's journal directory — and the
// Runtime image the node's provider.json names (read as the account; ""
// when it names none or cannot be read).
type Made struct {
	Home     string `json:"home"`
	NodeRoot string `json:"node_root"`
	Journals string `json:"journals"`
	Image    string `json:"image,omitempty"`
}

// Workflow returns the report of root's journal of the named workflow
// (<name>.journal), or nil.
func (s *Installation) Workflow(name string) *WorkflowStatus {
	for i := range s.Workflows {
		if w := &s.Workflows[i]; w.Workflow == name && filepath.Base(w.Journal) == name+".journal" {
			return w
		}
	}
	return nil
}

// NodeLeases is one node root's generation leases: an element of
// `leases --json`'s "nodes", and a status installation's "node".
type NodeLeases struct {
	InstallationID ident.InstallationID     `json:"installation_id"`
	NodeRoot       string                   `json:"node_root"`
	Generations    []lease.GenerationReport `json:"generations"`
	Error          string                   `json:"error,omitempty"`
}

// WorkflowStatus is one workflow journal's report and, while a live
// process holds the journal's lock, that process: the workflow is running.
type WorkflowStatus struct {
	workflow.Report
	Running *ProcessInfo `json:"running,omitempty"`
}

// ProcessInfo is a process holding a journal's lock. Command is argv[0],
// which the process sets freely: whoever prints it sanitizes it.
type ProcessInfo struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	UID     int    `json:"uid"`
}

// UnitStatus is systemd's view of an installation's unit.
type UnitStatus struct {
	Name string `json:"name"`
	// Reachable is false when systemd could not be asked; Error says why.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	systemd.UnitProperties
	// LastExit says how the last main process ended, as text.
	LastExit string `json:"last_exit,omitempty"`
}

// Bookkeeping states.
const (
	BookkeepingPresent = "present" // read; Installation is absent when it has no entry
	BookkeepingNone    = "none"    // no database on this host
	BookkeepingBusy    = "busy"    // another process held it open
	BookkeepingError   = "error"   // it cannot be read
	BookkeepingDamaged = "damaged" // it is not a whole, consistent database (bookkeeping.ErrDamaged)
	// BookkeepingDenied: this process may not read it (status not run as
	// root); no reason for attention.
	BookkeepingDenied = "denied"
)

// BookkeepingStatus is what the bbolt bookkeeping records for one
// installation, and the account and groups, which are the host's.
type BookkeepingStatus struct {
	Database     string                    `json:"database"`
	State        string                    `json:"state"`
	Error        string                    `json:"error,omitempty"`
	Installation *bookkeeping.Installation `json:"installation,omitempty"`
	Account      *bookkeeping.Account      `json:"account,omitempty"`
	GroupsAdded  []string                  `json:"groups_added"`
	Files        []BookkeepingFile         `json:"files"`
	Networks     []string                  `json:"networks"`
	// AccountMismatch, when set, says that the host's account oac-node is
	// not the one recorded (gone, or made again with other ids) and names
	// the recovery; the node roots are then not read as that account.
	AccountMismatch string `json:"account_mismatch,omitempty"`
}

// BookkeepingFile is a file the installer wrote for the installation.
type BookkeepingFile struct {
	Path    string    `json:"path"`
	Kind    string    `json:"kind"`
	Created time.Time `json:"created"`
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
