package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Takeover is a node the platform's installer made (its
// /etc/oac-node/account.json, no bookkeeping of this installer's) as
// FindTakeover found it agreeing with the host, or an interrupted takeover
// whose bookkeeping holds the facts already (Recorded): CONTRACT §11,
// "Moving from the platform's installer". Commit records it.
type Takeover struct {
	Host layout.Host
	ID   ident.InstallationID
	// Account is the platform's account.json.
	Account hostrecord.PlatformAccount
	// Record is the installation's host record.
	Record hostrecord.Record
	// User is the host's oac-node account.
	User accounts.User
	// Unit is set when the unit file exists (the platform's text or
	// this installer's).
	Unit bool
	// Network is the Docker network the platform's installer created, ""
	// for none.
	Network string
	// Recorded is set when the bookkeeping holds the facts already: an
	// interrupted takeover, of which only account.json's removal is left.
	Recorded bool
}

// NetworkInspector is the part of the Docker Engine FindTakeover reads.
type NetworkInspector interface {
	NetworkInspect(ctx context.Context, name string) (docker.Network, error)
}

// platformGroups are the groups the platform's installer adds the account
// to (its provider's device group).
var platformGroups = []string{"docker", "kvm"}

// takeoverRefusal is a refusal of a takeover before any change, naming
// what does not agree.
func takeoverRefusal(format string, args ...any) error {
	return workflow.Refusef("this host's node %s was made by the platform's installer (%s), and it cannot be taken over: "+format,
		args...)
}

// FindTakeover returns the takeover of installation id when the host holds
// the platform's installer's account.json, nil when it does not. Under the
// host lock and before any change, it checks every record of the
// platform's against the host and refuses (a workflow.Refusal naming what)
// when one does not agree: account.json's uid is the oac-node account's
// and the account passes the adoption rules; the groups it added are
// docker or kvm and the account's; the home is the account's directory; a
// created account has no recorded home mode; the host record is valid and
// names this node's paths; the unit, when present, is the platform's text
// for this node (this installer's without EnvironmentFile=) or this
// installer's; and, when engine is given, the Docker network
// oac-node-<id> is unlabelled or labelled for this installation. When the
// bookkeeping already records an account, the two records are compared
// instead: they must agree (an interrupted takeover, Recorded), or the
// host is refused.
func FindTakeover(ctx context.Context, h layout.Host, id ident.InstallationID, engine NetworkInspector) (*Takeover, error) {
	a, ok, err := hostrecord.ReadPlatformAccount(h)
	if err != nil {
		return nil, workflow.Refuse(fmt.Errorf("the platform installer's account record: %w", err))
	}
	if !ok {
		return nil, nil
	}
	path := hostrecord.PlatformAccountPath(h)
	refuse := func(format string, args ...any) error {
		return takeoverRefusal(format+"; nothing of it was taken over", append([]any{id, path}, args...)...)
	}
	if a.UID <= 0 {
		return nil, refuse("%s records uid %d", path, a.UID)
	}
	for _, g := range a.GroupsAdded {
		if !slices.Contains(platformGroups, g) {
			return nil, refuse("%s records the group %q as added, and the platform's installer adds only docker or kvm", path, g)
		}
	}
	t := &Takeover{Host: h, ID: id, Account: a}
	if done, err := t.compareBookkeeping(); err != nil || done {
		if err != nil {
			return nil, refuse("%v", err)
		}
		t.Recorded = true
		return t, nil
	}
	rec, err := hostrecord.Read(h, id)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, refuse("there is no host record %s for installation %s (the platform's node on this host is another installation's, or its installation was cut off before it)", h.Record(id), id)
	case err != nil:
		return nil, refuse("%v", err)
	case rec.InstallationID != id:
		return nil, refuse("the host record %s names installation %q", h.Record(id), rec.InstallationID)
	case rec.NodeRoot != h.NodeRoot(id) || rec.Unit != h.Unit(id):
		return nil, refuse("the host record %s names the node root %q and the unit %q, not %s and %s", h.Record(id), rec.NodeRoot, rec.Unit, h.NodeRoot(id), h.Unit(id))
	case rec.Provider != release.ProviderDocker && rec.Provider != release.ProviderMicrosandbox:
		return nil, refuse("the host record %s names the provider %q", h.Record(id), rec.Provider)
	}
	t.Record = rec
	dbs := accounts.Under(h.Root)
	facts, err := dbs.Facts(h.Home(), a.UID)
	if err != nil {
		return nil, refuse("%v", err)
	}
	if facts.User == nil {
		return nil, refuse("%s records the account %s with uid %d, and there is no account %s", path, layout.Account, a.UID, layout.Account)
	}
	if _, err := accounts.Decide(facts); err != nil {
		return nil, refuse("%v", err)
	}
	t.User = *facts.User
	for _, g := range a.GroupsAdded {
		if !slices.Contains(facts.Supplementary, g) {
			return nil, refuse("%s records that the platform's installer added %s to the group %s, and the account is not in it", path, layout.Account, g)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(h.Home(), &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR || int(st.Uid) != t.User.UID {
		return nil, refuse("the account's home %s is not a directory of uid %d", h.Home(), t.User.UID)
	}
	if _, has, _ := a.Mode(); has && a.Created {
		return nil, refuse("%s records an account the platform's installer created together with an adopted home's mode", path)
	}
	if t.Unit, err = checkPlatformUnit(h, rec); err != nil {
		return nil, refuse("%v", err)
	}
	if rec.Provider == release.ProviderDocker {
		name := docker.NetworkName(id)
		if engine == nil {
			t.Network = name // uninstall: the child removes it only when it exists
		} else {
			n, err := engine.NetworkInspect(ctx, name)
			switch {
			case errors.Is(err, docker.ErrNotFound):
			case err != nil:
				return nil, refuse("inspect the Docker network %s: %v", name, err)
			case n.Labels[InstallationLabel] != "" && n.Labels[InstallationLabel] != id.String():
				return nil, refuse("the Docker network %s is labelled %s=%s", name, InstallationLabel, n.Labels[InstallationLabel])
			default:
				t.Network = name
			}
		}
	}
	return t, nil
}

// checkPlatformUnit checks the node's unit file: absent (false), or the
// platform's text or this installer's (true); anything else is an error
// naming it.
func checkPlatformUnit(h layout.Host, rec hostrecord.Record) (bool, error) {
	path := h.Unit(rec.InstallationID)
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		return false, fmt.Errorf("the unit %s is not a regular file of root's", path)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	ours, err := systemd.Unit{InstallationID: rec.InstallationID, Provider: rec.Provider, NodeRoot: h.NodeRoot(rec.InstallationID)}.Render()
	if err != nil {
		return false, err
	}
	if bytes.Equal(got, ours) || bytes.Equal(got, PlatformUnit(ours)) {
		return true, nil
	}
	return false, fmt.Errorf("the unit %s is neither the platform installer's nor this installer's for this node (changed by hand?)", path)
}

// PlatformUnit is the platform's installer's unit text for the node whose
// unit this installer renders as ours: the same without the
// EnvironmentFile= line (CONTRACT §4.1).
func PlatformUnit(ours []byte) []byte {
	var out []byte
	for len(ours) > 0 {
		line := ours
		if i := bytes.IndexByte(ours, '\n'); i >= 0 {
			line = ours[:i+1]
		}
		ours = ours[len(line):]
		if bytes.HasPrefix(line, []byte("EnvironmentFile=")) {
			continue
		}
		out = append(out, line...)
	}
	return out
}

// compareBookkeeping compares account.json with a bookkeeping that
// records an account: done when they agree and the installation is
// recorded (an interrupted takeover), an error naming the difference when
// they do not; false without a bookkeeping account record.
func (t *Takeover) compareBookkeeping() (bool, error) {
	db, ok, err := readBookkeeping(t.Host)
	if err != nil || !ok {
		return false, err
	}
	defer db.Close()
	acct, recorded, err := db.Account()
	if err != nil {
		return false, err
	}
	insts, err := db.ListInstallations()
	if err != nil {
		return false, err
	}
	if !recorded {
		if len(insts) > 0 {
			return false, fmt.Errorf("the bookkeeping %s records installations and no account", t.Host.Bookkeeping())
		}
		return false, nil
	}
	bk := t.Host.Bookkeeping()
	switch {
	case acct.Created != t.Account.Created:
		return false, fmt.Errorf("the bookkeeping %s records the account as created %v, account.json as created %v", bk, acct.Created, t.Account.Created)
	case acct.UID != t.Account.UID:
		return false, fmt.Errorf("the bookkeeping %s records the account's uid %d, account.json uid %d", bk, acct.UID, t.Account.UID)
	}
	groups, err := db.Groups()
	if err != nil {
		return false, err
	}
	for _, g := range t.Account.GroupsAdded {
		if !slices.ContainsFunc(groups, func(x bookkeeping.Group) bool { return x.Name == g }) {
			return false, fmt.Errorf("account.json records the group %s as added and the bookkeeping %s does not", g, bk)
		}
	}
	if !slices.ContainsFunc(insts, func(x bookkeeping.Installation) bool { return x.ID == t.ID }) {
		return false, fmt.Errorf("the bookkeeping %s records an account and not installation %s", bk, t.ID)
	}
	return true, nil
}

// Facts is the bookkeeping's record of what the platform's installer made.
func (t *Takeover) Facts() bookkeeping.Takeover {
	h, id, rec := t.Host, t.ID, t.Record
	bt := bookkeeping.Takeover{
		Installation: bookkeeping.Installation{ID: id, Provider: rec.Provider, CoreURL: rec.CoreURL,
			NodeRoot: h.NodeRoot(id), Unit: h.Unit(id), EnvFile: h.EnvFile(id),
			AllowInsecureOrigin: rec.AllowInsecureOrigin, CoreCA: rec.CoreCASHA256, Platform: true},
		Account: bookkeeping.Account{Name: layout.Account, Created: t.Account.Created, UID: t.User.UID, GID: t.User.GID},
		Groups:  append([]string(nil), t.Account.GroupsAdded...),
		Files:   []bookkeeping.File{{Path: h.Record(id), Kind: bookkeeping.FileRecord}},
		Network: t.Network,
	}
	if mode, ok, _ := t.Account.Mode(); ok && !t.Account.Created {
		bt.Account.HomeMode = &mode
	}
	if t.Unit {
		bt.Files = append(bt.Files, bookkeeping.File{Path: h.Unit(id), Kind: bookkeeping.FileUnit})
	}
	return bt
}

// Commit takes the node over: it records the platform's facts in the
// bookkeeping in one durable transaction (unless Recorded), and only then
// removes account.json (its directory fsynced). It returns what it changed,
// as the operator reads it. The caller holds the host lock and has passed
// every check of the command.
func (t *Takeover) Commit() ([]string, error) {
	var changed []string
	if !t.Recorded {
		db, err := bookkeeping.Open(t.Host.Bookkeeping())
		if err != nil {
			return nil, err
		}
		safefile.Failpoint("takeover-before-record")
		err = db.TakeOver(t.Facts())
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		safefile.Failpoint("takeover-recorded")
		changed = append(changed, fmt.Sprintf("the bookkeeping %s (what the platform's installer made for the node, recorded)", t.Host.Bookkeeping()))
	}
	path := hostrecord.PlatformAccountPath(t.Host)
	if err := safefile.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return changed, fmt.Errorf("remove %s: %w", path, err)
	}
	safefile.Failpoint("takeover-account-record-removed")
	return append(changed, fmt.Sprintf("%s (the platform installer's account record, removed once the bookkeeping held it)", path)), nil
}

// PlatformNode reports whether the bookkeeping records the installation
// as taken over from the platform's installer.
func PlatformNode(h layout.Host, id ident.InstallationID) (bool, error) {
	db, ok, err := readBookkeeping(h)
	if err != nil || !ok {
		return false, err
	}
	defer db.Close()
	inst, err := db.GetInstallation(id)
	if errors.Is(err, bookkeeping.ErrNotFound) {
		return false, nil
	}
	return inst.Platform, err
}

// UnlabelledNetwork reports whether the bookkeeping records the
// installation's Docker network as the platform's installer's, made
// without labels.
func UnlabelledNetwork(h layout.Host, id ident.InstallationID) (bool, error) {
	db, ok, err := readBookkeeping(h)
	if err != nil || !ok {
		return false, err
	}
	defer db.Close()
	nets, err := db.Networks(id)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(nets, func(n bookkeeping.Network) bool { return n.Unlabelled }), nil
}
