package install

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/accounts/accountstest"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// The account oac-node that the bookkeeping records (created or adopted,
// with its uid and gid) and the host's account disagree: deleted by hand,
// its uid perhaps another account's now, or deleted and made again with
// other ids. The node's files belong to the recorded uid, so install
// refuses before any change, naming the recovery, whatever the token; the
// recovery named works.

// editDatabase rewrites the host's etc/<name> (passwd or group) line by
// line, as an operator's commands would.
func (f *runFixture) editDatabase(t *testing.T, name string, edit func(lines []string) []string) {
	t.Helper()
	p := filepath.Join(f.host.Root, "etc", name)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	out := strings.Join(edit(lines), "\n") + "\n"
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// withoutName drops the lines of name.
func withoutName(name string) func([]string) []string {
	return func(lines []string) []string {
		var out []string
		for _, l := range lines {
			if !strings.HasPrefix(l, name+":") {
				out = append(out, l)
			}
		}
		return out
	}
}

// adding appends lines.
func adding(add ...string) func([]string) []string {
	return func(lines []string) []string { return append(lines, add...) }
}

// nodeAccount is the host's oac-node account, which must exist.
func (f *runFixture) nodeAccount(t *testing.T) accounts.User {
	t.Helper()
	u, err := accounts.Under(f.host.Root).LookupUser(layout.Account)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// deleteAccount deletes the account as `userdel oac-node` does (its
// group with it).
func (f *runFixture) deleteAccount(t *testing.T) {
	t.Helper()
	if err := f.accts.DeleteServiceAccount(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// refusesNotRecorded is refusesUnchanged for a refusal about the
// account, with and without a token, which must wrap
// accounts.ErrNotRecorded and be the check command's verdict too.
func (f *runFixture) refusesNotRecorded(t *testing.T, want []string, not ...string) {
	t.Helper()
	for _, token := range []string{"", fixtureToken} {
		err := f.refusesUnchanged(t, func(c *Command) { c.Token = token }, want...)
		if !errors.Is(err, accounts.ErrNotRecorded) {
			t.Errorf("token %q: the refusal is not accounts.ErrNotRecorded: %v", token, err)
		}
		for _, n := range not {
			if strings.Contains(err.Error(), n) {
				t.Errorf("token %q: the refusal names %q: %v", token, n, err)
			}
		}
	}
	probe := Probe{Options: f.options(), Host: f.host}
	if c := probe.account(); !errors.Is(c.Err, accounts.ErrNotRecorded) {
		t.Errorf("the check command's account check: %v", c.Err)
	}
}

// The account deleted by hand (userdel): install refuses, naming the
// commands that make it again with its recorded ids and the uninstall;
// once the operator made it again so, the rerun completes (the account
// is in its group docker again).
func TestAnAccountDeletedByHandRefuses(t *testing.T) {
	f := newRunFixture(t)
	f.installed(t)
	u := f.nodeAccount(t)
	if u.UID != 999 || u.GID != 999 {
		t.Fatalf("the fake made %+v", u)
	}
	f.deleteAccount(t)
	f.refusesNotRecorded(t, []string{"account oac-node is gone", "uid 999 and gid 999", "belong to uid 999",
		"sudo groupadd --system --gid 999 oac-node && sudo useradd --system --no-log-init --uid 999 --gid 999 --no-create-home --home-dir /var/lib/oac-node",
		"sudo oac-node-install --uninstall --installation-id " + generationtest.InstallationID + " --force",
		"removes the home /var/lib/oac-node, whose uid no account holds"})

	// The operator runs the commands named.
	f.editDatabase(t, "group", adding("oac-node:x:999:"))
	f.editDatabase(t, "passwd", adding("oac-node:x:999:999::/var/lib/oac-node:/usr/sbin/nologin"))
	rep, err := f.install(t, nil)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("the rerun after the account was made again: %v\n%s", err, f.out.String())
	}
	if groups, _ := accounts.Under(f.host.Root).GroupNames(layout.Account); !strings.Contains(strings.Join(groups, ","), "docker") {
		t.Errorf("the account's groups after the rerun: %v", groups)
	}
}

// The account deleted and its uid given to another account: the node's
// home and files are that account's now. Install refuses, names that
// account and only the uninstall (the recorded uid is taken); it neither
// makes an account nor gives anybody the home.
func TestAnAccountDeletedAndItsUIDReusedRefuses(t *testing.T) {
	f := newRunFixture(t)
	f.installed(t)
	f.deleteAccount(t)
	f.editDatabase(t, "group", adding("alice:x:1000:"))
	f.editDatabase(t, "passwd", adding("alice:x:999:1000::/home/alice:/bin/bash"))
	f.refusesNotRecorded(t, []string{"account oac-node is gone", "which now belongs to the account alice", "keeps /var/lib/oac-node",
		"--uninstall --installation-id " + generationtest.InstallationID + " --force", "add the node again"}, "useradd", "Give the account back")
}

// A node that never registered (Core refused its address: root's records
// of the installation go, the account stays recorded), whose account was
// then deleted and its uid given to another account: the new command,
// with its token, reads Core's configuration with the token and runs no
// child before its checks; it must not make a new oac-node and hand it a
// home whose files another uid owns.
func TestAnUnregisteredNodesAccountGoneRefuses(t *testing.T) {
	f := newRunFixture(t)
	if err := os.WriteFile(filepath.Join(engineDir(f.host.Home()), "mismatch-register"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := f.install(t, nil); err == nil || !strings.Contains(err.Error(), "generate a new command in Web") {
		t.Fatalf("the first run: %v, want the address mismatch", err)
	}
	os.Remove(filepath.Join(engineDir(f.host.Home()), "mismatch-register"))
	f.deleteAccount(t)
	f.editDatabase(t, "group", adding("alice:x:1000:"))
	f.editDatabase(t, "passwd", adding("alice:x:999:1000::/home/alice:/bin/bash"))
	err := f.refusesUnchanged(t, nil, "account oac-node is gone", "alice", "--force")
	if !errors.Is(err, accounts.ErrNotRecorded) {
		t.Errorf("%v", err)
	}
	if _, err := accounts.Under(f.host.Root).LookupUser(layout.Account); !errors.Is(err, accounts.ErrNotFound) {
		t.Errorf("an account oac-node was made: %v", err)
	}
}

// The account deleted and made again with other ids (useradd gave it uid
// and gid 990): install refuses, naming the commands that give it back its
// recorded ids; no child runs as it. Once they ran, the rerun completes.
func TestAnAccountMadeAgainWithOtherIDsRefuses(t *testing.T) {
	f := newRunFixture(t)
	f.installed(t)
	f.deleteAccount(t)
	f.editDatabase(t, "group", adding("oac-node:x:990:"))
	f.editDatabase(t, "passwd", adding("oac-node:x:990:990::/var/lib/oac-node:/usr/sbin/nologin"))
	f.refusesNotRecorded(t, []string{"account oac-node has uid 990 and gid 990", "created it with uid 999 and gid 999", "deleted and made again",
		"sudo usermod --uid 999 oac-node && sudo groupmod --gid 999 oac-node", "--uninstall --installation-id " + generationtest.InstallationID + " --force"})

	// The operator runs the commands named.
	f.editDatabase(t, "group", func(lines []string) []string {
		return append(withoutName(layout.Account)(lines), "oac-node:x:999:")
	})
	f.editDatabase(t, "passwd", func(lines []string) []string {
		return append(withoutName(layout.Account)(lines), "oac-node:x:999:999::/var/lib/oac-node:/usr/sbin/nologin")
	})
	rep, err := f.install(t, nil)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("the rerun after the ids were given back: %v\n%s", err, f.out.String())
	}
}

// A record of an installer that did not record the gid: the uid alone is
// compared, and the account step records the gid when it runs.
func TestAnAccountRecordWithoutGID(t *testing.T) {
	f := newRunFixture(t)
	f.installed(t)
	db, err := bookkeeping.Open(f.host.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	acct, _, err := db.Account()
	if err != nil || acct.GID != 999 {
		t.Fatalf("the account record %+v %v", acct, err)
	}
	acct.GID = 0
	if err := db.PutAccount(acct); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := CheckAccount(f.host, generationtest.InstallationID); err != nil {
		t.Fatalf("the recorded uid matches: %v", err)
	}
	// The unit stopped, so the rerun runs the workflow, the account step
	// among its steps.
	if err := f.systemd.Stop(context.Background(), layout.UnitName(generationtest.InstallationID)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.install(t, nil); err != nil {
		t.Fatalf("rerun: %v\n%s", err, f.out.String())
	}
	db, err = bookkeeping.Open(f.host.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if acct, _, err := db.Account(); err != nil || acct.GID != 999 || acct.UID != 999 {
		t.Errorf("after the rerun: %+v %v", acct, err)
	}
}

// passwdOnlyUseradd is useradd cut off by a full /etc after it wrote
// /etc/passwd and before /etc/group: the account is there, its own group
// is not.
type passwdOnlyUseradd struct{ *accountstest.Fake }

func (c passwdOnlyUseradd) CreateServiceAccount(ctx context.Context, shell string) error {
	if err := c.Fake.CreateServiceAccount(ctx, shell); err != nil {
		return err
	}
	p := filepath.Join(c.Root, "etc/group")
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	var kept []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if !strings.HasPrefix(l, layout.Account+":") {
			kept = append(kept, l)
		}
	}
	if err := os.WriteFile(p, []byte(strings.Join(kept, "")), 0o644); err != nil {
		return err
	}
	return errors.New("useradd: failure while writing changes to /etc/group: No space left on device")
}

// The installer's own half-made account (the bookkeeping recorded
// created: true before useradd, which a full /etc cut off after
// /etc/passwd): the rerun is not refused as for a foreign account; it
// deletes the half-made account and creates it anew, with its group.
func TestARerunRedoesItsOwnHalfMadeAccount(t *testing.T) {
	f := newRunFixture(t)
	if _, err := f.install(t, func(c *Command) { c.Accounts = passwdOnlyUseradd{f.accts} }); err == nil || !strings.Contains(err.Error(), "No space left") {
		t.Fatalf("the first run: %v\n%s", err, f.out.String())
	}
	if _, err := accounts.Under(f.host.Root).LookupGroup(layout.Account); !errors.Is(err, accounts.ErrNotFound) {
		t.Fatalf("the half-made account's group: %v", err)
	}
	rep, err := f.install(t, nil)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("the rerun: %v\n%s", err, f.out.String())
	}
	u := f.nodeAccount(t)
	g, err := accounts.Under(f.host.Root).LookupGroup(layout.Account)
	if err != nil || g.GID != u.GID {
		t.Errorf("the account %+v, its group %+v: %v", u, g, err)
	}
}

// groupOnlyUseradd is useradd cut off after it wrote /etc/group and
// before /etc/passwd: the account's group is there, the account is not.
type groupOnlyUseradd struct{ *accountstest.Fake }

func (c groupOnlyUseradd) CreateServiceAccount(ctx context.Context, shell string) error {
	if err := c.Fake.CreateServiceAccount(ctx, shell); err != nil {
		return err
	}
	p := filepath.Join(c.Root, "etc/passwd")
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	var kept []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if !strings.HasPrefix(l, layout.Account+":") {
			kept = append(kept, l)
		}
	}
	if err := os.WriteFile(p, []byte(strings.Join(kept, "")), 0o644); err != nil {
		return err
	}
	return errors.New("useradd: failure while writing changes to /etc/passwd: No space left on device")
}

// The group the installer's own useradd left without the account: the
// bookkeeping recorded, with the creation, that no group of the name was
// there before; the rerun removes that group and creates the account
// anew, instead of failing "group oac-node exists" at every rerun.
func TestARerunRedoesItsOwnGroupWithoutAccount(t *testing.T) {
	f := newRunFixture(t)
	if _, err := f.install(t, func(c *Command) { c.Accounts = groupOnlyUseradd{f.accts} }); err == nil || !strings.Contains(err.Error(), "No space left") {
		t.Fatalf("the first run: %v\n%s", err, f.out.String())
	}
	if _, err := accounts.Under(f.host.Root).LookupGroup(layout.Account); err != nil {
		t.Fatalf("the half-made account's group: %v", err)
	}
	rep, err := f.install(t, nil)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("the rerun: %v\n%s", err, f.out.String())
	}
	u := f.nodeAccount(t)
	g, err := accounts.Under(f.host.Root).LookupGroup(layout.Account)
	if err != nil || g.GID != u.GID {
		t.Errorf("the account %+v, its group %+v: %v", u, g, err)
	}
}

// A group oac-node that was there before the installer, without an
// account: install refuses before any change, naming the command that
// removes it (useradd --user-group would fail on it), and never removes
// that group itself.
func TestAForeignGroupWithoutAccountRefuses(t *testing.T) {
	f := newRunFixture(t)
	f.editDatabase(t, "group", adding("oac-node:x:4321:"))
	f.refusesUnchanged(t, nil, "group oac-node", "sudo groupdel oac-node")
	if g, err := accounts.Under(f.host.Root).LookupGroup(layout.Account); err != nil || g.GID != 4321 {
		t.Errorf("the foreign group: %+v %v", g, err)
	}
}
