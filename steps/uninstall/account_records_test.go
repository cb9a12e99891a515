package uninstall

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/accounts/accountstest"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
)

// The account oac-node that the bookkeeping records and the host's account
// disagree (deleted by hand, its uid perhaps another account's now; or
// deleted and made again with other ids): the node's files belong to the
// recorded uid. Uninstall refuses before any change without --force; with
// --force nothing runs as the account, no account or group is changed,
// the home stays, and root's records go.

// handEdit rewrites the host's etc/<name> line by line, as an operator's
// commands would.
func (f *hostFixture) handEdit(t *testing.T, name string, edit func(lines []string) []string) {
	t.Helper()
	p := filepath.Join(f.host.Root, "etc", name)
	data, err := os.ReadFile(p)
	must(t, err)
	var lines []string
	if s := strings.TrimRight(string(data), "\n"); s != "" {
		lines = strings.Split(s, "\n")
	}
	must(t, os.WriteFile(p, []byte(strings.Join(edit(lines), "\n")+"\n"), 0o644))
}

func appending(add ...string) func([]string) []string {
	return func(lines []string) []string { return append(lines, add...) }
}

// notRecorded are the ways the host's account leaves the recorded one
// (uid 999, made by the fake's useradd).
var notRecorded = []struct {
	name    string
	mend    func(t *testing.T, f *hostFixture)
	problem []string
	// homeKept: the home is another account's or may hold what another
	// account wrote; else it is the node's alone and goes.
	homeKept bool
}{
	{"deleted", func(t *testing.T, f *hostFixture) {}, []string{"account oac-node is gone", "belong to uid 999",
		"sudo useradd --system --no-log-init --uid 999 --user-group", "removes the home /var/lib/oac-node, whose uid no account holds"}, false},
	{"deleted, its uid reused", func(t *testing.T, f *hostFixture) {
		f.handEdit(t, "group", appending("alice:x:1000:"))
		f.handEdit(t, "passwd", appending("alice:x:999:1000::/home/alice:/bin/bash"))
	}, []string{"account oac-node is gone", "which now belongs to the account alice", "keeps /var/lib/oac-node"}, true},
	{"made again with another uid", func(t *testing.T, f *hostFixture) {
		f.handEdit(t, "group", appending("oac-node:x:990:"))
		f.handEdit(t, "passwd", appending("oac-node:x:990:990::/var/lib/oac-node:/usr/sbin/nologin"))
	}, []string{"account oac-node has uid 990 and gid 990", "deleted and made again", "sudo usermod --uid 999 oac-node", "keeps /var/lib/oac-node"}, true},
}

// deleteAccount deletes the account as `userdel oac-node` does.
func (f *hostFixture) deleteAccount(t *testing.T) {
	t.Helper()
	must(t, f.accts.DeleteServiceAccount(context.Background()))
}

func TestUninstallRefusesAnAccountNotRecorded(t *testing.T) {
	for _, tc := range notRecorded {
		t.Run(tc.name, func(t *testing.T) {
			f := newHostFixture(t)
			f.install(t)
			f.deleteAccount(t)
			tc.mend(t, f)
			before, calls := treetest.Snapshot(t, f.host.Root, treetest.Options{}), len(f.accts.Calls())
			_, err := f.uninstall(t, false)
			if !errors.Is(err, accounts.ErrNotRecorded) || !strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
				t.Fatalf("uninstall: %v, want the account refusal", err)
			}
			for _, want := range append([]string{"rerun this command with --force", "no account is changed"}, tc.problem...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the refusal lacks %q: %v", want, err)
				}
			}
			if d := generationtest.DiffHost(before, treetest.Snapshot(t, f.host.Root, treetest.Options{})); d != "" {
				t.Errorf("the refusal changed the host:\n%s", d)
			}
			if c := f.accts.Calls(); len(c) != calls {
				t.Errorf("the refusal called %v", c[calls:])
			}
			if n := f.children.Load(); n != 0 {
				t.Errorf("the refusal ran %d service-account children", n)
			}
			if len(f.engine(t).Nets) != 1 || !f.systemd.Enabled(layout.UnitName(id)) {
				t.Error("the refusal changed the engine or the unit")
			}
		})
	}
}

// The recovery the refusals name: uninstall --force removes the unit and
// root's records, runs nothing as the account, changes no account or
// group, and keeps the home with the node's files, saying how to remove
// them, unless it is the node's alone (the account the installer created
// gone, its uid nobody's), which goes. A host whose account was only
// deleted is then as before the installation.
func TestUninstallForceWithAnAccountNotRecorded(t *testing.T) {
	for _, tc := range notRecorded {
		t.Run(tc.name, func(t *testing.T) {
			f := newHostFixture(t)
			f.install(t)
			f.deleteAccount(t)
			tc.mend(t, f)
			passwd, _ := os.ReadFile(filepath.Join(f.host.Root, "etc/passwd"))
			group, _ := os.ReadFile(filepath.Join(f.host.Root, "etc/group"))
			calls := len(f.accts.Calls())
			f.core.Close() // Core is not asked
			rep, err := f.uninstall(t, true)
			if err != nil || rep.Condition != workflow.Complete {
				t.Fatalf("uninstall --force: %v %v\n%s", rep, err, f.out.String())
			}
			if c := f.accts.Calls(); len(c) != calls {
				t.Errorf("uninstall --force called %v", c[calls:])
			}
			if n := f.children.Load(); n != 0 {
				t.Errorf("uninstall --force ran %d service-account children", n)
			}
			if after, _ := os.ReadFile(filepath.Join(f.host.Root, "etc/passwd")); string(after) != string(passwd) {
				t.Errorf("passwd changed:\n%s", after)
			}
			if after, _ := os.ReadFile(filepath.Join(f.host.Root, "etc/group")); string(after) != string(group) {
				t.Errorf("group changed:\n%s", after)
			}
			if _, err := os.Stat(filepath.Join(f.host.NodeRoot(id), "registered.json")); (err == nil) != tc.homeKept {
				t.Errorf("the node's files in the home: %v, want them kept: %v", err, tc.homeKept)
			}
			for _, p := range []string{f.host.Record(id), f.host.Bookkeeping(), f.host.EtcDir(), f.host.Unit(id), f.host.EnvFile(id), f.host.DockerConfig()} {
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s remains: %v", p, err)
				}
			}
			if f.systemd.Enabled(layout.UnitName(id)) {
				t.Error("the unit is still enabled")
			}
			out := f.out.String()
			want := append([]string{tc.problem[0]}, "with --force nothing runs as it and no account is changed",
				"sudo docker network rm "+docker.NetworkName(id), "uninstalled from this host")
			if tc.homeKept {
				want = append(want, "change no account", "sudo rm -rf /var/lib/oac-node")
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("the output lacks %q:\n%s", w, out)
				}
			}
			if tc.homeKept {
				return
			}
			if d := f.leftovers(t); d != "" {
				t.Errorf("the host differs from before the installation:\n%s", d)
			}
			f.out.Reset()
			if _, err := f.uninstall(t, false); err != nil || !strings.Contains(f.out.String(), "already uninstalled") {
				t.Errorf("a rerun: %v\n%s", err, f.out.String())
			}
		})
	}
}

// cutAfterUserdel deletes the account, then fails as an uninstall cut off
// right after userdel would: before it forgot the account.
type cutAfterUserdel struct{ *accountstest.Fake }

func (c cutAfterUserdel) DeleteServiceAccount(ctx context.Context) error {
	if err := c.Fake.DeleteServiceAccount(ctx); err != nil {
		return err
	}
	return errors.New("cut off after userdel")
}

// The account gone because this uninstallation's own account step deleted
// it before it was cut off is no mismatch: the rerun completes, without
// --force, and removes the home the installer created.
func TestUninstallResumesAfterItsOwnUserdel(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	c := f.command(false)
	c.Accounts = cutAfterUserdel{f.accts}
	if _, err := Run(context.Background(), c); err == nil || !strings.Contains(err.Error(), "cut off after userdel") {
		t.Fatalf("the first run: %v", err)
	}
	if _, err := f.dbs.LookupUser(layout.Account); !errors.Is(err, accounts.ErrNotFound) {
		t.Fatalf("the account: %v", err)
	}
	f.out.Reset()
	rep, err := f.uninstall(t, false)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("the rerun: %v %v\n%s", rep, err, f.out.String())
	}
	if d := f.leftovers(t); d != "" {
		t.Errorf("the host differs from before the installation:\n%s\n%s", d, f.out.String())
	}
}

// An adopted account deleted by hand: the refusal names its recorded ids
// and that --force keeps the home (an adopted home is never removed);
// --force then changes no account and forgets it.
func TestUninstallForceWithAnAdoptedAccountGone(t *testing.T) {
	f := newHostFixture(t)
	f.adoptable(t)
	f.install(t)
	f.deleteAccount(t)
	_, err := f.uninstall(t, false)
	if !errors.Is(err, accounts.ErrNotRecorded) {
		t.Fatalf("uninstall: %v, want the account refusal", err)
	}
	for _, want := range []string{"adopted it with uid 999", "keeps /var/lib/oac-node", "--force"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q: %v", want, err)
		}
	}
	calls := len(f.accts.Calls())
	if rep, err := f.uninstall(t, true); err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("uninstall --force: %v %v\n%s", rep, err, f.out.String())
	}
	if c := f.accts.Calls(); len(c) != calls || f.children.Load() != 0 {
		t.Errorf("uninstall --force changed accounts %v or ran %d children", c[calls:], f.children.Load())
	}
	if _, err := os.Stat(filepath.Join(f.host.NodeRoot(id), "registered.json")); err != nil {
		t.Errorf("the adopted home's files: %v", err)
	}
	if _, err := os.Lstat(f.host.Bookkeeping()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the bookkeeping remains: %v", err)
	}
}

// passwdOnlyUserdel is userdel cut off by a full /etc after it wrote
// /etc/passwd and before /etc/group: the account's line is gone, its own
// group and its memberships stay.
type passwdOnlyUserdel struct{ *accountstest.Fake }

func (c passwdOnlyUserdel) DeleteServiceAccount(ctx context.Context) error {
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
	return errors.New("userdel: failure while writing changes to /etc/group: No space left on device")
}

// userdel that left the account's own group and its memberships: the
// rerun finishes what the installer made (the bookkeeping says it created
// the account), so that a later install's useradd finds no group of its
// name, and the host is as before the installation.
func TestUninstallFinishesAHalfDoneUserdel(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	c := f.command(false)
	c.Accounts = passwdOnlyUserdel{f.accts}
	if _, err := Run(context.Background(), c); err == nil || !strings.Contains(err.Error(), "No space left") {
		t.Fatalf("the first run: %v", err)
	}
	if _, err := f.dbs.LookupGroup(layout.Account); err != nil {
		t.Fatalf("the half-done userdel left no group: %v", err)
	}
	// shadow keeps an entry for every account, the deleted one's too
	// (written now: the fake's useradd keeps no shadow); the rerun's
	// pwconv removes that entry only.
	passwd, err := os.ReadFile(filepath.Join(f.host.Root, "etc", "passwd"))
	must(t, err)
	var shadow []string
	for _, l := range append(strings.Split(strings.TrimRight(string(passwd), "\n"), "\n"), layout.Account+":x:") {
		if name, _, _ := strings.Cut(l, ":"); name != "" {
			shadow = append(shadow, name+":!:20000:0:99999:7:::")
		}
	}
	sp := filepath.Join(f.host.Root, "etc", "shadow")
	must(t, os.WriteFile(sp, []byte(strings.Join(shadow, "\n")+"\n"), 0o640))
	t.Cleanup(func() { os.Remove(sp) })
	f.out.Reset()
	rep, err := f.uninstall(t, false)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("the rerun: %v %v\n%s", rep, err, f.out.String())
	}
	if _, err := f.dbs.LookupGroup(layout.Account); !errors.Is(err, accounts.ErrNotFound) {
		t.Errorf("the group %s after the rerun: %v\n%s", layout.Account, err, f.out.String())
	}
	left, err := os.ReadFile(sp)
	must(t, err)
	if strings.Contains(string(left), layout.Account+":") || strings.Count(string(left), "\n") != len(shadow)-1 {
		t.Errorf("shadow after the rerun:\n%s", left)
	}
	must(t, os.Remove(sp))
	if d := f.leftovers(t); d != "" {
		t.Errorf("the host differs from before the installation:\n%s\n%s", d, f.out.String())
	}
}
