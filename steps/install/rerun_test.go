package install

import (
	"context"
	"errors"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// failRegistration makes the next registration fail (before Core saw it).
func (f *runFixture) failRegistration(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.base, "engine", "fail-register"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
}

// failedAtRegister leaves an unregistered node whose run failed at the
// register step.
func (f *runFixture) failedAtRegister(t *testing.T) {
	t.Helper()
	f.failRegistration(t)
	if _, err := f.install(t, nil); err == nil || !strings.Contains(err.Error(), "could not reach Core") {
		t.Fatalf("first run: %v", err)
	}
	if f.registrations() != 0 {
		t.Fatal("registered")
	}
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// A registered node whose image was deleted imports it again and does not
// enroll again.
func TestRerunReimportsADeletedImageWithoutEnrolling(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.installed(t)
	st := f.engineState(t)
	st.Images = nil
	if err := f.engine.Save(st); err != nil {
		t.Fatal(err)
	}
	rep, err := f.install(t, nil)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("rerun: %v %v\n%s", rep, err, f.out.String())
	}
	if got := f.engineState(t); got.Loads != st.Loads+1 || len(got.Images) != 1 {
		t.Errorf("loads %d -> %d, images %d", st.Loads, got.Loads, len(got.Images))
	}
	if n := f.registrations(); n != 1 {
		t.Errorf("%d registrations", n)
	}
	if _, err := os.Lstat(JournalPath(f.host, generationtest.InstallationID) + ".1"); err != nil {
		t.Errorf("the first run's journal was not kept as a receipt: %v", err)
	}
}

// A newer installer over an unfinished journal of an unregistered node
// keeps the journal aside and starts over, enrolling once: the node's
// leftovers that no longer match what the run computes are replaced, those
// that match are kept.
func TestNewerInstallerStartsOverReplacingLeftoversThatDiffer(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.failedAtRegister(t)
	root := f.host.NodeRoot(generationtest.InstallationID)
	node := inode(t, filepath.Join(root, release.PathNode))
	archive := inode(t, filepath.Join(root, release.PathRuntimeImage))
	for _, rel := range []string{release.PathSeccomp, "installation.json", "provider.json"} {
		nodeFile(t, f, rel, "{}\n", 0o600)
	}
	f.version = "test-2"
	rep, err := f.install(t, nil)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("rerun: %v %v\n%s", rep, err, f.out.String())
	}
	if inode(t, filepath.Join(root, release.PathNode)) != node || inode(t, filepath.Join(root, release.PathRuntimeImage)) != archive {
		t.Error("a matching download was replaced")
	}
	for _, rel := range []string{release.PathSeccomp, "installation.json", "provider.json"} {
		if data, err := os.ReadFile(filepath.Join(root, rel)); err != nil || string(data) == "{}\n" {
			t.Errorf("%s that differs was not replaced (%v)", rel, err)
		}
	}
	if n := f.registrations(); n != 1 {
		t.Errorf("%d registrations", n)
	}
	old, err := workflow.InspectJournal(JournalPath(f.host, generationtest.InstallationID)+".1", workflow.Lookup)
	if err != nil || old.Binding.Version != "test-1" || old.Condition == workflow.Complete {
		t.Errorf("the old journal was not kept aside: %+v %v", old, err)
	}
}

// A registered node's unfinished journal of another installer is kept
// aside and the run starts over: every step checks the host, nothing is
// enrolled again.
func TestRegisteredNodesUnfinishedJournalOfAnotherInstaller(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.installed(t)
	f.failRegistration(t) // would fail a second enrollment
	unit := "oac-node-" + generationtest.InstallationID + ".service"
	f.systemd.Stop(context.Background(), unit)
	f.systemd.Fail("start", unit, errors.New("the unit did not start"))
	if _, err := f.install(t, nil); err == nil {
		t.Fatal("the start did not fail")
	}
	f.version = "test-2"
	rep, err := f.install(t, nil)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("rerun: %v %v\n%s", rep, err, f.out.String())
	}
	if n := f.registrations(); n != 1 {
		t.Errorf("%d registrations", n)
	}
	old, err := workflow.InspectJournal(JournalPath(f.host, generationtest.InstallationID)+".2", workflow.Lookup)
	if err != nil || old.Binding.Version != "test-1" || old.Condition != workflow.Failed {
		t.Errorf("the failed journal was not kept aside: %+v %v", old, err)
	}
}

// An unregistered node whose account lost its home (removed by hand, or
// never made by a run a full /etc stopped) is installed by the rerun: the
// home is made again, 0700 and the account's, before anything runs as the
// account, and the run goes on.
func TestRerunMakesAMissingHomeAgain(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.failedAtRegister(t)
	os.Remove(filepath.Join(f.base, "engine", "fail-register"))
	if err := os.RemoveAll(f.host.Home()); err != nil {
		t.Fatal(err)
	}
	rep, err := f.install(t, nil)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("rerun: %v %v\n%s", rep, err, f.out.String())
	}
	u, err := accounts.Under(f.host.Root).LookupUser("oac-node")
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(f.host.Home(), &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR || st.Mode&0o7777 != 0o700 || int(st.Uid) != u.UID || int(st.Gid) != u.GID {
		t.Errorf("home mode %#o uid %d gid %d, want a 0700 directory of %d:%d", st.Mode, st.Uid, st.Gid, u.UID, u.GID)
	}
	if f.registrations() != 1 {
		t.Errorf("%d registrations", f.registrations())
	}
}
