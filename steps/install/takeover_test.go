package install

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/launcher"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// platformLayout turns the installed fixture host into the host the
// platform's installer leaves for the same node (CONTRACT §3.4, §4.1,
// §11): the node root, account, group and host record are the same; the
// bookkeeping and journals of this installer's go; account.json records
// the account it created and the group it added; the unit has no
// EnvironmentFile= line; the network has no labels. (The node root's JSON
// records stay in this installer's layout: their comparison by value is
// another change's.)
func (f *runFixture) platformLayout(t *testing.T) {
	t.Helper()
	id := ident.InstallationID(generationtest.InstallationID)
	u := f.nodeAccount(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Remove(f.host.Bookkeeping()))
	must(os.RemoveAll(f.host.JournalsRoot()))
	os.Remove(f.host.EnvFile(id))
	data, err := hostrecord.PlatformAccount{Format: 1, Created: true, UID: u.UID, GroupsAdded: []string{"docker"}}.Marshal()
	must(err)
	writeHostFile(t, f, "etc/oac-node/account.json", string(data), 0o644)
	ours, err := systemd.Unit{InstallationID: id, Provider: "docker", NodeRoot: f.host.NodeRoot(id)}.Render()
	must(err)
	writeHostFile(t, f, "etc/systemd/system/"+layout.UnitName(id), string(PlatformUnit(ours)), 0o644)
	st := f.engineState(t)
	st.Nets[docker.NetworkName(id)] = map[string]string{}
	must(f.engine.Save(st))
	// The platform's retained helper: its installer as the launcher, no
	// generation-preparer.
	root := f.host.NodeRoot(id)
	launcherPath := filepath.Join(root, layout.HelperLauncherFile)
	fi, err := os.Stat(launcherPath)
	must(err)
	must(os.Remove(launcherPath))
	must(os.WriteFile(launcherPath, []byte("PK the platform's installer"), 0o600))
	st2 := fi.Sys().(*syscall.Stat_t)
	must(os.Chown(launcherPath, int(st2.Uid), int(st2.Gid)))
	must(os.Remove(filepath.Join(root, layout.HelperFile)))
}

// A rerun on a host whose node the platform's installer made takes it
// over: the bookkeeping records what that installer made (the account it
// created, the group it added, its unlabelled network, the host record and
// unit), account.json goes, and the rerun continues as a rerun of a
// registered node: no token, no second registration, the unit rewritten
// with the EnvironmentFile= line. A second rerun changes nothing.
func TestRerunTakesOverAPlatformNode(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.installed(t)
	regs := f.registrations()
	f.platformLayout(t)
	rep, err := f.install(t, nil)
	if err != nil {
		t.Fatalf("the takeover rerun: %v\n%s", err, f.out.String())
	}
	if rep.Condition != workflow.Complete {
		t.Fatalf("condition %s", rep.Condition)
	}
	id := ident.InstallationID(generationtest.InstallationID)
	if _, err := os.Lstat(hostrecord.PlatformAccountPath(f.host)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("account.json remains: %v", err)
	}
	if f.registrations() != regs {
		t.Errorf("the takeover registered the node again")
	}
	root := f.host.NodeRoot(id)
	if got, err := os.ReadFile(filepath.Join(root, layout.HelperLauncherFile)); err != nil || !bytes.Equal(got, launcher.Bytes()) {
		t.Errorf("the platform's launcher was not replaced with this installer's: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(root, layout.HelperFile)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the helper after the takeover: %v %v", fi, err)
	}
	db, err := bookkeeping.OpenReadOnly(f.host.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	acct, ok, err := db.Account()
	if err != nil || !ok || !acct.Created || acct.UID != f.nodeAccount(t).UID {
		t.Errorf("the bookkeeping's account: %+v %v %v", acct, ok, err)
	}
	groups, _ := db.Groups()
	if len(groups) != 1 || groups[0].Name != "docker" {
		t.Errorf("the bookkeeping's groups: %+v", groups)
	}
	nets, _ := db.Networks(id)
	if len(nets) != 1 || nets[0].Name != docker.NetworkName(id) || !nets[0].Unlabelled {
		t.Errorf("the bookkeeping's networks: %+v", nets)
	}
	inst, err := db.GetInstallation(id)
	if err != nil || !inst.Registered {
		t.Errorf("the bookkeeping's installation: %+v %v", inst, err)
	}
	ours, _ := systemd.Unit{InstallationID: id, Provider: "docker", NodeRoot: f.host.NodeRoot(id)}.Render()
	if got, _ := os.ReadFile(f.host.Unit(id)); string(got) != string(ours) {
		t.Errorf("the unit after the takeover:\n%s", got)
	}
	if !strings.Contains(f.out.String(), "take over the node the platform's installer made") {
		t.Errorf("output lacks the takeover's phase:\n%s", f.out.String())
	}
	db.Close()

	t.Run("a second rerun changes nothing", func(t *testing.T) {
		rep, err := f.install(t, nil)
		if err != nil || rep.Run != workflow.RunConverged {
			t.Fatalf("%+v %v\n%s", rep, err, f.out.String())
		}
	})
}

// A takeover that does not agree with the host is refused before any
// change, naming what: the uid, a group, the unit, a network labelled for
// another installation.
func TestTakeoverRefusesWhatDisagrees(t *testing.T) {
	t.Parallel()
	id := ident.InstallationID(generationtest.InstallationID)
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, f *runFixture)
		want string
	}{
		{"another uid", func(t *testing.T, f *runFixture) {
			data, _ := hostrecord.PlatformAccount{Format: 1, Created: true, UID: f.nodeAccount(t).UID + 3, GroupsAdded: []string{"docker"}}.Marshal()
			writeHostFile(t, f, "etc/oac-node/account.json", string(data), 0o644)
		}, "uid"},
		{"a group not the account's", func(t *testing.T, f *runFixture) {
			data, _ := hostrecord.PlatformAccount{Format: 1, Created: true, UID: f.nodeAccount(t).UID, GroupsAdded: []string{"kvm"}}.Marshal()
			writeHostFile(t, f, "etc/oac-node/account.json", string(data), 0o644)
		}, "group kvm"},
		{"a unit changed by hand", func(t *testing.T, f *runFixture) {
			writeHostFile(t, f, "etc/systemd/system/"+layout.UnitName(id), "[Unit]\n", 0o644)
		}, "changed by hand"},
		{"a network of another installation", func(t *testing.T, f *runFixture) {
			st := f.engineState(t)
			st.Nets[docker.NetworkName(id)] = map[string]string{InstallationLabel: "another"}
			f.engine.Save(st)
		}, "labelled"},
		{"not JSON of format 1", func(t *testing.T, f *runFixture) {
			writeHostFile(t, f, "etc/oac-node/account.json", `{"format": 2, "created": true, "uid": 5, "groups_added": []}`, 0o644)
		}, "format 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRunFixture(t)
			f.installed(t)
			f.platformLayout(t)
			tc.edit(t, f)
			f.refusesUnchanged(t, nil, tc.want, "account.json")
		})
	}
}
