package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/generation"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// Root's facts about the installations, each read without changing
// anything: the host records, the bbolt bookkeeping (opened read-only) and
// systemd's view of the units.

// unitReader is the part of systemd status uses.
type unitReader interface {
	Properties(ctx context.Context, unit string) (systemd.UnitProperties, error)
	Close() error
}

// dialSystemd connects to systemd for status; tests replace it.
var dialSystemd = func(ctx context.Context) (unitReader, error) { return systemd.Dial(ctx) }

// systemdTimeout bounds status's connection to systemd and each query.
const systemdTimeout = 5 * time.Second

// unitStatus is systemd's view of an installation's unit.
type unitStatus struct {
	Name string `json:"name"`
	// Reachable is false when systemd could not be asked; Error says why.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	systemd.UnitProperties
	// LastExit says how the last main process ended, as text.
	LastExit string `json:"last_exit,omitempty"`
}

// readUnits asks systemd about each installation's unit. When systemd
// cannot be reached every unit says so; that is no failure of status.
func readUnits(ctx context.Context, ids []string) map[string]*unitStatus {
	out := map[string]*unitStatus{}
	for _, id := range ids {
		out[id] = &unitStatus{Name: layout.UnitName(id)}
	}
	if len(ids) == 0 {
		return out
	}
	// go-systemd closes the connection when the dial's context ends: it
	// lasts for all the queries, each bounded by its own timeout.
	dctx, cancel := context.WithTimeout(ctx, systemdTimeout*time.Duration(1+len(ids)))
	defer cancel()
	sd, err := dialSystemd(dctx)
	if err != nil {
		for _, u := range out {
			u.Error = err.Error()
		}
		return out
	}
	defer sd.Close()
	for _, u := range out {
		qctx, cancel := context.WithTimeout(dctx, systemdTimeout)
		p, err := sd.Properties(qctx, u.Name)
		cancel()
		if err != nil {
			u.Error = err.Error()
			continue
		}
		u.Reachable, u.UnitProperties, u.LastExit = true, p, p.LastExit()
	}
	return out
}

// hostRecord is root's record of an installation, /etc/oac-node/<id>.json
// (CONTRACT §3.4, §10): where the node's Core is.
type hostRecord struct {
	Provider            string `json:"provider"`
	CoreURL             string `json:"core_url"`
	AllowInsecureOrigin bool   `json:"allow_insecure_origin"`
	CoreCASHA256        string `json:"core_ca_sha256"`
}

// maxHostRecord bounds a host record.
const maxHostRecord = 1 << 16

// readHostRecord reads the host record of id: nil when there is none.
func readHostRecord(h layout.Host, id string) (*hostRecord, error) {
	dir, err := safefile.OpenRoot(h.EtcDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	data, err := dir.ReadFile(id+".json", safefile.Expect{UID: 0, MaxSize: maxHostRecord})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec hostRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("the host record %s: %w", h.Record(id), err)
	}
	return &rec, nil
}

// recordIDs lists the installations the host records name
// (/etc/oac-node/<id>.json, canonical ids).
func recordIDs(h layout.Host) []string {
	m, _ := filepath.Glob(filepath.Join(h.EtcDir(), "*-*-*-*-*.json"))
	var ids []string
	for _, p := range m {
		id := strings.TrimSuffix(filepath.Base(p), ".json")
		if validateInstallationID(id) == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// Bookkeeping states.
const (
	bookkeepingPresent = "present" // read; Installation is absent when it has no entry
	bookkeepingNone    = "none"    // no database on this host
	bookkeepingBusy    = "busy"    // another process held it open
	bookkeepingError   = "error"   // it cannot be read
	bookkeepingDamaged = "damaged" // it is not a whole, consistent database (bookkeeping.ErrDamaged)
	// bookkeepingDenied: this process may not read it (status not run as
	// root); no reason for attention.
	bookkeepingDenied = "denied"
)

// bookkeepingStatus is what the bbolt bookkeeping records for one
// installation, and the account and groups, which are the host's.
type bookkeepingStatus struct {
	Database     string                    `json:"database"`
	State        string                    `json:"state"`
	Error        string                    `json:"error,omitempty"`
	Installation *bookkeeping.Installation `json:"installation,omitempty"`
	Account      *bookkeeping.Account      `json:"account,omitempty"`
	GroupsAdded  []string                  `json:"groups_added"`
	Files        []bookkeepingFile         `json:"files"`
	Networks     []string                  `json:"networks"`
	// AccountMismatch, when set, says that the host's account oac-node is
	// not the one recorded (gone, or made again with other ids) and names
	// the recovery; the node roots are then not read as that account.
	AccountMismatch string `json:"account_mismatch,omitempty"`
}

// bookkeepingFile is a file the installer wrote for the installation.
type bookkeepingFile struct {
	Path    string    `json:"path"`
	Kind    string    `json:"kind"`
	Created time.Time `json:"created"`
}

// bookkeepingSnapshot is the whole database, read in one open.
type bookkeepingSnapshot struct {
	state, err    string
	installations []bookkeeping.Installation
	account       *bookkeeping.Account
	groups        []string
	files         []bookkeeping.File
	networks      []bookkeeping.Network
	// mismatch is how the host's account differs from the recorded one;
	// nil when it is the recorded one or none is recorded.
	mismatch *accounts.Mismatch
}

// readBookkeeping reads the bookkeeping read-only: a missing database is
// state none, not an error; nothing is created or migrated.
func readBookkeeping(h layout.Host) bookkeepingSnapshot {
	db, err := bookkeeping.OpenReadOnly(h.Bookkeeping())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return bookkeepingSnapshot{state: bookkeepingNone}
	case errors.Is(err, bookkeeping.ErrBusy):
		return bookkeepingSnapshot{state: bookkeepingBusy, err: err.Error()}
	case errors.Is(err, fs.ErrPermission):
		return bookkeepingSnapshot{state: bookkeepingDenied, err: err.Error()}
	case errors.Is(err, bookkeeping.ErrDamaged):
		return bookkeepingSnapshot{state: bookkeepingDamaged, err: err.Error()}
	case err != nil:
		return bookkeepingSnapshot{state: bookkeepingError, err: err.Error()}
	}
	defer db.Close()
	s := bookkeepingSnapshot{state: bookkeepingPresent}
	var errs []error
	var e error
	s.installations, e = db.ListInstallations()
	errs = append(errs, e)
	acct, ok, e := db.Account()
	errs = append(errs, e)
	if ok {
		s.account = &acct
	}
	groups, e := db.Groups()
	errs = append(errs, e)
	for _, g := range groups {
		s.groups = append(s.groups, g.Name)
	}
	s.files, e = db.Files("")
	errs = append(errs, e)
	s.networks, e = db.Networks("")
	errs = append(errs, e)
	if err := errors.Join(errs...); err != nil {
		s.state, s.err = bookkeepingError, err.Error()
		if errors.Is(err, bookkeeping.ErrDamaged) {
			s.state = bookkeepingDamaged
		}
		return s
	}
	if s.account != nil {
		// Databases that cannot be read leave the account unjudged here;
		// reading the node roots then fails on them and says so.
		if r, ok := install.RecordedAccount(*s.account, true); ok {
			s.mismatch, _ = accounts.Under(h.Root).CheckRecorded(r)
		}
	}
	return s
}

// accountNext is what to do about an account that is not the recorded
// one, for installation id: give it back its recorded ids when they are
// free, or remove the node with uninstall --force, which changes no
// account.
func accountNext(m *accounts.Mismatch, id string) string {
	uninstall := "remove the node in Web and run: sudo oac-node-install --uninstall --installation-id " + id + " --force"
	if cmd := m.RecreateCommand(); cmd != "" {
		return m.Problem() + "; give the account back its recorded ids: " + cmd + ", then rerun the install command Web generated for this node; or " + uninstall
	}
	return m.Problem() + "; " + uninstall
}

// readNodesAs reads the node roots as the service account (readNodes),
// unless the account is not the recorded one: nothing then runs as it,
// and no node root is read.
func readNodesAs(ctx context.Context, host layout.Host, books bookkeepingSnapshot, req inspectRequest, stderr io.Writer) ([]nodeInspection, error) {
	if books.mismatch != nil {
		return []nodeInspection{}, nil
	}
	return readNodes(ctx, host, req, stderr)
}

// ids lists the installations the bookkeeping records.
func (s bookkeepingSnapshot) ids() []string {
	var ids []string
	for _, inst := range s.installations {
		if validateInstallationID(inst.ID) == nil {
			ids = append(ids, inst.ID)
		}
	}
	return ids
}

// forInstallation is the snapshot's part for one installation.
func (s bookkeepingSnapshot) forInstallation(h layout.Host, id string) *bookkeepingStatus {
	b := &bookkeepingStatus{Database: h.Bookkeeping(), State: s.state, Error: s.err, Account: s.account,
		GroupsAdded: nonNil(s.groups), Files: []bookkeepingFile{}, Networks: []string{}}
	if s.mismatch != nil {
		b.AccountMismatch = accountNext(s.mismatch, id)
	}
	for i := range s.installations {
		if s.installations[i].ID == id {
			inst := s.installations[i]
			b.Installation = &inst
		}
	}
	for _, f := range s.files {
		if f.InstallationID == id {
			b.Files = append(b.Files, bookkeepingFile{Path: f.Path, Kind: f.Kind, Created: f.Created})
		}
	}
	for _, n := range s.networks {
		if n.InstallationID == id {
			b.Networks = append(b.Networks, n.Name)
		}
	}
	sort.Slice(b.Files, func(i, j int) bool { return b.Files[i].Path < b.Files[j].Path })
	return b
}

// coreRequests is, for every installation with a host record, the Core
// status asks about it as the service account: root's address of Core.
func coreRequests(records map[string]*hostRecord) map[string]generation.NodeStatusRequest {
	out := map[string]generation.NodeStatusRequest{}
	for id, rec := range records {
		if rec == nil {
			continue
		}
		out[id] = generation.NodeStatusRequest{InstallationID: id, CoreURL: rec.CoreURL,
			AllowInsecureOrigin: rec.AllowInsecureOrigin, CoreCASHA256: rec.CoreCASHA256}
	}
	return out
}
