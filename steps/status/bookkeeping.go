package status

import (
	"errors"
	"io/fs"
	"sort"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// bookkeepingSnapshot is the whole database, read in one open.
type bookkeepingSnapshot struct {
	state, err    string
	installations []bookkeeping.Installation
	account       *bookkeeping.Account
	groups        []string
	files         []bookkeeping.File
	networks      []bookkeeping.Network
	command       *bookkeeping.Command
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
		return bookkeepingSnapshot{state: BookkeepingNone}
	case errors.Is(err, bookkeeping.ErrBusy):
		return bookkeepingSnapshot{state: BookkeepingBusy, err: err.Error()}
	case errors.Is(err, fs.ErrPermission):
		return bookkeepingSnapshot{state: BookkeepingDenied, err: err.Error()}
	case errors.Is(err, bookkeeping.ErrDamaged):
		return bookkeepingSnapshot{state: BookkeepingDamaged, err: err.Error()}
	case err != nil:
		return bookkeepingSnapshot{state: BookkeepingError, err: err.Error()}
	}
	defer db.Close()
	s := bookkeepingSnapshot{state: BookkeepingPresent}
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
	cmd, ok, e := db.GetCommand()
	errs = append(errs, e)
	if ok {
		s.command = &cmd
	}
	if err := errors.Join(errs...); err != nil {
		s.state, s.err = BookkeepingError, err.Error()
		if errors.Is(err, bookkeeping.ErrDamaged) {
			s.state = BookkeepingDamaged
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
func accountNext(m *accounts.Mismatch, id ident.InstallationID) string {
	uninstall := "remove the node in Web and run: sudo oac-node-install --uninstall --installation-id " + id.String() + " --force"
	if cmd := m.RecreateCommand(); cmd != "" {
		return m.Problem() + "; give the account back its recorded ids: " + cmd + ", then rerun the install command Web generated for this node; or " + uninstall
	}
	return m.Problem() + "; " + uninstall
}

// ids lists the installations the bookkeeping records.
func (s bookkeepingSnapshot) ids() []ident.InstallationID {
	var ids []ident.InstallationID
	for _, inst := range s.installations {
		if inst.ID.Valid() {
			ids = append(ids, inst.ID)
		}
	}
	return ids
}

// forInstallation is the snapshot's part for one installation.
func (s bookkeepingSnapshot) forInstallation(h layout.Host, id ident.InstallationID) *BookkeepingStatus {
	b := &BookkeepingStatus{Database: h.Bookkeeping(), State: s.state, Error: s.err, Account: s.account,
		GroupsAdded: nonNil(s.groups), Files: []BookkeepingFile{}, Networks: []string{}}
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
			b.Files = append(b.Files, BookkeepingFile{Path: f.Path, Kind: f.Kind, Created: f.Created})
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
