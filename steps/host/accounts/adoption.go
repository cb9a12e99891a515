package accounts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// ErrNotAdoptable is wrapped by every refusal of Decide: an account or
// home named like the service account's exists that the installer must not
// take over.
var ErrNotAdoptable = errors.New("the oac-node account cannot be adopted")

// Facts is what the adoption rules look at, gathered by Databases.Facts.
type Facts struct {
	// User is the account named oac-node; nil when there is none.
	User *User
	// PrimaryGroup names the group whose gid is the account's; "" when no
	// group has it.
	PrimaryGroup string
	// Supplementary names the groups that list the account as a member.
	Supplementary []string
	// GroupExists says whether a group named oac-node exists.
	GroupExists bool
	// HomeExists says whether /var/lib/oac-node exists, as anything.
	HomeExists bool
	// RecordedUID is the uid the bookkeeping recorded when the installer
	// created or adopted the account; -1 when it records none.
	RecordedUID int
}

// Decision is what to do about the service account.
type Decision int

const (
	// Create: no account exists; create it.
	Create Decision = iota + 1
	// UseExisting: the account exists and may be adopted (or is the one
	// the installer created or adopted before).
	UseExisting
)

func (d Decision) String() string {
	switch d {
	case Create:
		return "create"
	case UseExisting:
		return "use existing"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// AllowedGroups are the supplementary groups the installer itself may add.
var AllowedGroups = []string{"docker", "kvm"}

// AdoptionError is a refusal of the account found, decided before any
// change: what was found and the next step, one or more sentences. Decide's
// wrap ErrNotAdoptable, and ErrNotRecorded too when the account is not the
// recorded one; Mismatch.Refusal's wrap ErrNotRecorded. The caller returns
// it as a workflow.Refusal, so the command that prints it says that nothing
// was changed.
type AdoptionError struct {
	msg   string
	kinds []error
}

func (e *AdoptionError) Error() string { return e.msg }

// Unwrap returns the sentinels the refusal matches.
func (e *AdoptionError) Unwrap() []error { return e.kinds }

func refusal(format string, args ...any) error {
	return &AdoptionError{msg: fmt.Sprintf(format, args...), kinds: []error{ErrNotAdoptable}}
}

// Decide applies the adoption rules (CONTRACT §10 "Account", §4.5 step 5) to
// facts. It changes nothing; each refusal is a *AdoptionError wrapping
// ErrNotAdoptable and names what to do.
func Decide(f Facts) (Decision, error) {
	name, home := layout.Account, layout.Default.Home()
	u := f.User
	if u == nil {
		if f.GroupExists {
			return 0, refusal("A group %s exists, but there is no account %s: it is left from an earlier installation or belongs to something else, and the installer makes the account with its own group of that name. Remove the group once you are sure nothing needs it (sudo groupdel %s), then run the command again.", name, name, name)
		}
		if f.HomeExists {
			return 0, refusal("%s exists, but there is no account %s: it is left from an earlier installation or belongs to something else. Move it away, or remove it once you are sure nothing needs it (sudo rm -rf %s), then run the command again.", home, name, home)
		}
		return Create, nil
	}
	if u.UID == 0 || u.GID == 0 {
		return 0, refusal("The account %s has uid %d and gid %d: an account of the root user or group cannot be the node's service account. Remove that account (sudo userdel %s), then run the command again.", name, u.UID, u.GID, name)
	}
	if f.RecordedUID >= 0 && f.RecordedUID != u.UID {
		// CheckRecorded says more, naming who holds the recorded uid;
		// this is the adoption rules' own guard.
		return 0, &AdoptionError{msg: fmt.Sprintf("The account %s has uid %d, but this host's records say the installer set up uid %d: the account was replaced. Give it back uid %d (sudo usermod --uid %d %s), or remove the node with --uninstall --force, then run the command again.", name, u.UID, f.RecordedUID, f.RecordedUID, f.RecordedUID, name), kinds: []error{ErrNotAdoptable, ErrNotRecorded}}
	}
	if u.Home != home {
		return 0, refusal("An account %s exists with home %s, not %s, so it is not a node service account. Remove or rename that account (sudo userdel %s), then run the command again.", name, u.Home, home, name)
	}
	if base := filepath.Base(u.Shell); base == "false" {
		return 0, refusal("The account %s has the shell %s; the installer adopts only an account with a nologin shell. Set one (sudo usermod --shell /usr/sbin/nologin %s), then run the command again.", name, u.Shell, name)
	} else if base != "nologin" || !filepath.IsAbs(u.Shell) {
		return 0, refusal("The account %s has the login shell %q; the installer adopts only an account with a nologin shell. Set one (sudo usermod --shell /usr/sbin/nologin %s), then run the command again.", name, u.Shell, name)
	}
	if f.PrimaryGroup != name {
		group := f.PrimaryGroup
		if group == "" {
			group = fmt.Sprintf("gid %d (no such group)", u.GID)
		}
		return 0, refusal("The account %s has the primary group %s, not its own group %s. Remove that account (sudo userdel %s), then run the command again.", name, group, name, name)
	}
	var extra []string
	for _, g := range f.Supplementary {
		if g != name && !contains(AllowedGroups, g) {
			extra = append(extra, g)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		var cmds []string
		for _, g := range extra {
			cmds = append(cmds, fmt.Sprintf("sudo gpasswd --delete %s %s", name, g))
		}
		return 0, refusal("The account %s is also in the group(s) %s; the installer adopts only an account in its own group, docker and kvm. Remove it from them (%s), then run the command again.", name, strings.Join(extra, ", "), strings.Join(cmds, "; "))
	}
	return UseExisting, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Facts looks up the service account, its groups and whether home exists
// (home is /var/lib/oac-node on the host, or its counterpart under a test
// root). recordedUID is the bookkeeping's uid, -1 for none.
func (d Databases) Facts(home string, recordedUID int) (Facts, error) {
	f := Facts{RecordedUID: recordedUID}
	if _, err := os.Lstat(home); err == nil {
		f.HomeExists = true
	} else if !errors.Is(err, os.ErrNotExist) {
		return f, fmt.Errorf("look at %s: %w", home, err)
	}
	if _, err := d.LookupGroup(layout.Account); err == nil {
		f.GroupExists = true
	} else if !errors.Is(err, ErrNotFound) {
		return f, err
	}
	u, err := d.LookupUser(layout.Account)
	if errors.Is(err, ErrNotFound) {
		return f, nil
	}
	if err != nil {
		return f, err
	}
	f.User = &u
	if g, err := d.LookupGroupID(u.GID); err == nil {
		f.PrimaryGroup = g.Name
	} else if !errors.Is(err, ErrNotFound) {
		return f, err
	}
	f.Supplementary, err = d.GroupNames(u.Name)
	return f, err
}
