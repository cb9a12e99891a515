package uninstall

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
)

// platformLayout turns the installed fixture host into the host the
// platform's installer leaves (CONTRACT §3.4, §4.1, §11): no bookkeeping
// and no journals of this installer's, its account.json (created or
// adopted, the group it added, an adopted home's mode as Python's oct()
// writes it), the host record with every path, the unit without
// EnvironmentFile=, no env file, and the Docker network without labels.
func (f *hostFixture) platformLayout(t *testing.T, homeMode string) {
	t.Helper()
	db, err := bookkeeping.Open(f.host.Bookkeeping())
	must(t, err)
	acct, _, err := db.Account()
	must(t, err)
	db.Close()
	for _, p := range []string{f.host.Bookkeeping(), f.host.EnvFile(id)} {
		must(t, os.Remove(p))
	}
	must(t, os.RemoveAll(f.host.JournalsRoot()))
	a := hostrecord.PlatformAccount{Format: 1, Created: acct.Created, UID: acct.UID, GroupsAdded: []string{"docker"}}
	if !acct.Created && homeMode != "" {
		a.HomeMode = homeMode
	}
	data, err := a.Marshal()
	must(t, err)
	writeFile(t, hostrecord.PlatformAccountPath(f.host), string(data), 0o644)
	rec, err := hostrecord.Read(f.host, id)
	must(t, err)
	rec.NodeRoot, rec.Unit = f.host.NodeRoot(id), f.host.Unit(id)
	must(t, hostrecord.Write(f.host, rec))
	ours, err := systemd.Unit{InstallationID: id, Provider: "docker", NodeRoot: f.host.NodeRoot(id)}.Render()
	must(t, err)
	writeFile(t, f.host.Unit(id), string(install.PlatformUnit(ours)), 0o644)
	must(t, fileEngineOf(f.host.Home()).Save(dockertest.FileState{Nets: map[string]map[string]string{docker.NetworkName(id): {}}}))
}

// An uninstall of a node the platform's installer made removes what that
// installer made, as its own uninstall would: the unit, the node root, the
// unlabelled network, the account it created (or, adopted, the group it
// added and the home's mode), account.json and /etc/oac-node. It takes the
// node over first: account.json goes only once the bookkeeping holds its
// facts.
func TestUninstallOfAPlatformNode(t *testing.T) {
	for _, adopted := range []bool{false, true} {
		name := map[bool]string{false: "created account", true: "adopted account"}[adopted]
		t.Run(name, func(t *testing.T) {
			f := newHostFixture(t)
			if adopted {
				f.adoptable(t)
			}
			f.install(t)
			f.platformLayout(t, "0o755")
			rep, err := f.uninstall(t, false)
			if err != nil {
				t.Fatalf("%v\n%s", err, f.out.String())
			}
			if rep.Condition != workflow.Complete {
				t.Fatalf("condition %s", rep.Condition)
			}
			if d := f.leftovers(t); d != "" {
				t.Errorf("the host differs from before the platform's installation:\n%s\noutput:\n%s", d, f.out.String())
			}
			if n := f.engine(t).Nets; len(n) != 0 {
				t.Errorf("the platform's network remains: %v", n)
			}
			_, lerr := f.dbs.LookupUser(layout.Account)
			if !adopted && !errors.Is(lerr, accounts.ErrNotFound) {
				t.Errorf("the account the platform's installer created remains: %v", lerr)
			}
			if adopted {
				groups, err := f.dbs.GroupNames(layout.Account)
				must(t, err)
				if slices.Contains(groups, "docker") {
					t.Errorf("the adopted account is still in the group docker: %v", groups)
				}
			}
			if !strings.Contains(f.out.String(), "uninstalled from this host") {
				t.Errorf("output: %s", f.out.String())
			}
		})
	}
}

// A platform node whose records do not agree with the host is refused
// before any change, naming what does not agree.
func TestUninstallRefusesAPlatformNodeThatDisagrees(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(t *testing.T, f *hostFixture)
		wants string
	}{
		{"another uid", func(t *testing.T, f *hostFixture) {
			a, _, err := hostrecord.ReadPlatformAccount(f.host)
			must(t, err)
			a.UID += 7
			data, _ := a.Marshal()
			writeFile(t, hostrecord.PlatformAccountPath(f.host), string(data), 0o644)
		}, "uid"},
		{"a group not added", func(t *testing.T, f *hostFixture) {
			a, _, err := hostrecord.ReadPlatformAccount(f.host)
			must(t, err)
			a.GroupsAdded = []string{"kvm"}
			data, _ := a.Marshal()
			writeFile(t, hostrecord.PlatformAccountPath(f.host), string(data), 0o644)
		}, "group kvm"},
		{"a group the platform never adds", func(t *testing.T, f *hostFixture) {
			a, _, err := hostrecord.ReadPlatformAccount(f.host)
			must(t, err)
			a.GroupsAdded = []string{"docker", "sudo"}
			data, _ := a.Marshal()
			writeFile(t, hostrecord.PlatformAccountPath(f.host), string(data), 0o644)
		}, `"sudo"`},
		{"a unit changed by hand", func(t *testing.T, f *hostFixture) {
			writeFile(t, f.host.Unit(id), "[Unit]\nDescription=mine\n", 0o644)
		}, "changed by hand"},
		{"no host record", func(t *testing.T, f *hostFixture) {
			must(t, os.Remove(f.host.Record(id)))
		}, "no host record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newHostFixture(t)
			f.install(t)
			f.platformLayout(t, "")
			tc.edit(t, f)
			before := treetest.Snapshot(t, f.host.Root, treetest.Options{})
			_, err := f.uninstall(t, false)
			var r *workflow.Refusal
			if !errors.As(err, &r) || !strings.Contains(err.Error(), tc.wants) || !strings.Contains(err.Error(), "platform's installer") {
				t.Fatalf("want a refusal naming %q, got %v", tc.wants, err)
			}
			if d := generationtest.DiffHost(before, treetest.Snapshot(t, f.host.Root, treetest.Options{})); d != "" {
				t.Errorf("the refusal changed the host:\n%s", d)
			}
		})
	}
}

// An uninstall cut off between the bookkeeping's record of the takeover
// and account.json's removal finds both: the bookkeeping holds the facts,
// the two agree, and the rerun removes account.json and uninstalls.
func TestUninstallResumesAnInterruptedTakeover(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	f.platformLayout(t, "")
	tk, err := install.FindTakeover(t.Context(), f.host, id, nil)
	if err != nil || tk == nil {
		t.Fatalf("takeover: %v %v", tk, err)
	}
	data, err := os.ReadFile(hostrecord.PlatformAccountPath(f.host))
	must(t, err)
	if _, err := tk.Commit(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, hostrecord.PlatformAccountPath(f.host), string(data), 0o644) // the removal never happened
	again, err := install.FindTakeover(t.Context(), f.host, id, nil)
	if err != nil || again == nil || !again.Recorded {
		t.Fatalf("the interrupted takeover: %+v %v", again, err)
	}
	if _, err := f.uninstall(t, false); err != nil {
		t.Fatalf("%v\n%s", err, f.out.String())
	}
	if d := f.leftovers(t); d != "" {
		t.Errorf("the host differs from before the platform's installation:\n%s", d)
	}
}
