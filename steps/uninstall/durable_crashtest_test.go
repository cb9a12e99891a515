//go:build crashtest

package uninstall

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Every removal of the uninstallation is followed by an fsync of the
// directory it was made in, and the journal's directory is created
// durably: the journal directory and its parent, the unit's directory,
// /etc/oac-node (env file, host record, installer.db), /etc (the account
// databases after userdel, /etc/oac-node itself), the databases, and
// /var/lib (the home).
func TestUninstallMakesItsRemovalsDurable(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	r := f.host.Root
	w := safefile.WatchSyncs(
		f.host.JournalDir(id), filepath.Dir(f.host.JournalDir(id)),
		filepath.Dir(f.host.Unit(id)), f.host.EtcDir(), filepath.Join(r, "etc"),
		filepath.Join(r, "etc/passwd"), filepath.Join(r, "etc/group"), filepath.Dir(f.host.Home()),
	)
	rep, err := f.uninstall(t, false)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("%v %v\n%s", rep, err, f.out.String())
	}
	for _, p := range w.Unsynced() {
		t.Errorf("the uninstallation changed %s without fsync", p)
	}
}

// A step that finds its removal already made (by an earlier run, which a
// power cut may have stopped before it synced) makes it durable before it
// reports done: the unit's and env file's directories, and the account
// databases after an earlier userdel; the home's removal syncs /var/lib.
func TestUninstallStepsMakeWhatTheyFindDurable(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	ctx := context.Background()
	c := f.command(false)
	e := &Env{Opts: c.Options, HostPaths: f.host, Adapter: f.accts, DBs: f.dbs, Manager: f.systemd,
		Runner: c.Child, Running: c.Running, Out: &f.out}
	must(t, f.accts.DeleteServiceAccount(ctx)) // the earlier run's userdel
	for _, p := range []string{f.host.Unit(id), f.host.EnvFile(id)} {
		must(t, removeFile(p))
	}
	r := f.host.Root
	for _, tc := range []struct {
		name  string
		step  workflow.Step
		paths []string
	}{
		{"the unit and env file", removeUnitStep{e}, []string{filepath.Dir(f.host.Unit(id)), f.host.EtcDir()}},
		{"the account and its home", accountStep{e}, []string{filepath.Join(r, "etc/passwd"), filepath.Join(r, "etc/group"), filepath.Join(r, "etc"), filepath.Dir(f.host.Home())}},
	} {
		w := safefile.WatchSyncs(tc.paths...)
		if _, err := tc.step.Run(ctx, workflow.Facts{}); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, p := range w.Unsynced() {
			t.Errorf("%s: found removed without fsync of %s", tc.name, p)
		}
	}
}

// An adopted account's home regains its recorded mode durably: the home is
// fsynced after the chmod, before the record of the mode goes.
func TestUninstallRestoresTheAdoptedHomeDurably(t *testing.T) {
	f := newHostFixture(t)
	f.adoptable(t)
	f.install(t)
	w := safefile.WatchSyncs(f.host.Home())
	rep, err := f.uninstall(t, false)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("%v %v\n%s", rep, err, f.out.String())
	}
	for _, p := range w.Unsynced() {
		t.Errorf("the home's mode was restored without fsync of %s", p)
	}
}
