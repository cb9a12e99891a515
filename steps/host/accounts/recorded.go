package accounts

import (
	"errors"
	"fmt"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// ErrNotRecorded is wrapped by every refusal about a service account that
// is not the one the installer's bookkeeping records: the account oac-node
// is gone (deleted by hand), or it has other ids (deleted and made again).
var ErrNotRecorded = errors.New("the oac-node account is not the one the installer recorded")

// Recorded is the service account as the installer's bookkeeping records
// it: the ids it had when the installer created or adopted it.
type Recorded struct {
	UID int
	// GID is the account's primary gid; 0 when the record predates it
	// (then only the uid is compared).
	GID int
	// Created is true when the installer created the account, false when
	// it adopted it.
	Created bool
}

// Mismatch is a host whose service account is not the recorded one. The
// node's files still belong to the recorded uid, so nothing may run as,
// be given to, or be removed for the account that now bears the name.
type Mismatch struct {
	Recorded Recorded
	// Now is the host's oac-node account; nil when there is none.
	Now *User
	// UIDHolder names another account that holds the recorded uid now; ""
	// when none does.
	UIDHolder string
	// Recreate are the commands (without sudo) that give the account back
	// its recorded ids; nil when they cannot, because another account or
	// group holds them or the group oac-node has another gid.
	Recreate []string
}

// CheckRecorded compares the host's account oac-node with the recorded
// one: nil when the account exists with the recorded uid (and gid, when
// recorded). It reads the databases only.
func (d Databases) CheckRecorded(rec Recorded) (*Mismatch, error) {
	m := &Mismatch{Recorded: rec}
	u, err := d.LookupUser(layout.Account)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return nil, err
	case u.UID == rec.UID && (rec.GID == 0 || u.GID == rec.GID):
		return nil, nil
	default:
		m.Now = &u
	}
	holder, err := d.LookupUserID(rec.UID)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return nil, err
	case holder.Name != layout.Account:
		m.UIDHolder = holder.Name
	}
	if m.Recreate, err = d.recreate(m); err != nil {
		return nil, err
	}
	return m, nil
}

// recreate returns the commands that give the account back its recorded
// ids, or nil when the ids are taken. A gone account is made again with
// useradd (and its group with groupadd when that is gone too); an account
// made again with other ids gets them back with usermod and groupmod,
// which keep its name, groups and the files it owns.
func (d Databases) recreate(m *Mismatch) ([]string, error) {
	if m.UIDHolder != "" {
		return nil, nil
	}
	name, uid, gid := layout.Account, m.Recorded.UID, m.Recorded.GID
	own, err := d.LookupGroup(name)
	ownExists := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	// gidFree reports whether no group holds gid.
	gidFree := func() (bool, error) {
		_, err := d.LookupGroupID(gid)
		if errors.Is(err, ErrNotFound) {
			return true, nil
		}
		return false, err
	}
	if m.Now != nil {
		var cmds []string
		if m.Now.UID != uid {
			cmds = append(cmds, fmt.Sprintf("usermod --uid %d %s", uid, name))
		}
		if gid != 0 && m.Now.GID != gid {
			if !ownExists || own.GID != m.Now.GID {
				return nil, nil // its primary group is not its own
			}
			if free, err := gidFree(); err != nil || !free {
				return nil, err
			}
			cmds = append(cmds, fmt.Sprintf("groupmod --gid %d %s", gid, name))
		}
		return cmds, nil
	}
	shell := NologinShells[0]
	if sh, err := FindNologin(); err == nil {
		shell = sh
	}
	useradd := func(group string) string {
		return fmt.Sprintf("useradd --system --no-log-init --uid %d %s --no-create-home --home-dir %s --shell %s %s", uid, group, layout.Default.Home(), shell, name)
	}
	switch {
	case gid == 0 && ownExists:
		return []string{useradd("--gid " + name)}, nil
	case gid == 0:
		return []string{useradd("--user-group")}, nil
	case ownExists && own.GID == gid:
		return []string{useradd(fmt.Sprintf("--gid %d", gid))}, nil
	case ownExists:
		return nil, nil // the group oac-node has another gid
	}
	if free, err := gidFree(); err != nil || !free {
		return nil, err
	}
	return []string{fmt.Sprintf("groupadd --system --gid %d %s", gid, name), useradd(fmt.Sprintf("--gid %d", gid))}, nil
}

// HomeOrphaned reports whether the home holds nothing but what the
// installer made: it created the account, which is gone, and no account
// holds its uid, so none can have written there since. Uninstall removes
// such a home as it removes the home of an account it deletes; any other
// it keeps.
func (m *Mismatch) HomeOrphaned() bool {
	return m.Now == nil && m.UIDHolder == "" && m.Recorded.Created
}

// Problem says how the host's account differs from the recorded one and
// whose the node's files are, as a clause for the refusals and status.
func (m *Mismatch) Problem() string {
	name, home, rec := layout.Account, layout.Default.Home(), m.Recorded
	how := "created"
	if !rec.Created {
		how = "adopted"
	}
	ids := fmt.Sprintf("uid %d", rec.UID)
	if rec.GID != 0 {
		ids += fmt.Sprintf(" and gid %d", rec.GID)
	}
	var s string
	if m.Now == nil {
		s = fmt.Sprintf("the account %s is gone: this host's records say the installer %s it with %s, and the node's files in %s belong to uid %d",
			name, how, ids, home, rec.UID)
	} else {
		s = fmt.Sprintf("the account %s has uid %d and gid %d, but this host's records say the installer %s it with %s: it was deleted and made again, and the node's files in %s belong to uid %d",
			name, m.Now.UID, m.Now.GID, how, ids, home, rec.UID)
	}
	if m.UIDHolder != "" {
		s += fmt.Sprintf(", which now belongs to the account %s", m.UIDHolder)
	}
	return s
}

// Refusal is the refusal of a command that found m, before any change:
// what differs and whose the node's files are, then next (the recovery,
// one or more sentences), as a *AdoptionError wrapping ErrNotRecorded. The
// caller returns it as a workflow.Refusal (the command that prints it says
// that nothing was changed).
func (m *Mismatch) Refusal(next string) error {
	p := m.Problem()
	return &AdoptionError{msg: strings.ToUpper(p[:1]) + p[1:] + ". " + next, kinds: []error{ErrNotRecorded}}
}

// RecreateCommand is Recreate as one line to run, each command with sudo;
// "" when the ids cannot be given back.
func (m *Mismatch) RecreateCommand() string {
	var cmds []string
	for _, c := range m.Recreate {
		cmds = append(cmds, "sudo "+c)
	}
	return strings.Join(cmds, " && ")
}
