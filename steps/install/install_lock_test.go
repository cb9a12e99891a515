package install

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/workflow"
)

// holdInstallLock takes <node root>/install.lock as the generation helper
// does (flock LOCK_EX|LOCK_NB on the node account's 0600 file) until the
// returned function releases it.
func holdInstallLock(t *testing.T, f *runFixture) func() {
	t.Helper()
	p := filepath.Join(f.host.NodeRoot(generationtest.InstallationID), layout.InstallLockFile)
	if _, err := os.Lstat(p); err != nil {
		nodeFile(t, f, layout.InstallLockFile, "", 0o600)
	}
	fd, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(fd.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	return func() { fd.Close() }
}

// A rerun while the generation helper holds install.lock refuses with the
// platform's phrase, says what to do and changes nothing; once the helper
// ended, the same rerun completes. A rerun that does run steps holds the
// lock from its check through registration (a helper started meanwhile
// would be refused), and not after: the unit's node program runs the
// helper.
func TestARerunRefusesWhileTheHelperHoldsInstallLock(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.installed(t)
	f.token = ""
	release := holdInstallLock(t, f)
	before := f.tree(t, false)
	_, err := f.install(t, nil)
	if err == nil {
		t.Fatalf("no refusal while the helper holds install.lock\n%s", f.out.String())
	}
	msg := workflow.Message(err)
	for _, want := range []string{"Another node installation is running", "wait until it ends, then run this command again", "Nothing was changed."} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not say %q: %s", want, msg)
		}
	}
	if d := generationtest.DiffHost(before, f.tree(t, false)); d != "" {
		t.Errorf("the refusal changed the host:\n%s", d)
	}
	release()
	if rep, err := f.install(t, nil); err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("the rerun once the helper ended: %v\n%s", err, f.out.String())
	}
	// Free again after the run: a helper can take it.
	holdInstallLock(t, f)()
}

// helperAcquire runs the generation helper's lock taking (noderoot.Env
// Acquire, install.lock first) for a new generation of f's node, as the
// node account's helper does, and releases what it took.
func helperAcquire(t *testing.T, f *runFixture) error {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(f.host.NodeRoot(generationtest.InstallationID), &st); err != nil {
		t.Fatal(err)
	}
	e, err := noderoot.NewEnv(noderoot.Options{Action: noderoot.ActionPrepare, Home: f.host.Home(), UID: int(st.Uid),
		Identity: lease.Identity{InstallationID: generationtest.InstallationID, Generation: 7, SpecificationDigest: strings.Repeat("a", 64)}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	return e.Acquire()
}

// The other order: a rerun that runs its steps holds install.lock from its
// check through registration, so the helper started meanwhile is refused
// ("Another node installation is running"; the node program retries),
// and releases it before the node service starts, when the helper takes it.
func TestTheHelperIsRefusedWhileARerunHoldsInstallLock(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.installed(t)
	holdInstallLock(t, f)() // install.lock exists, as once a helper ran
	if err := os.Remove(filepath.Join(f.host.NodeRoot(generationtest.InstallationID), layout.RuntimeArtifactsFile)); err != nil {
		t.Fatal(err)
	}
	got := map[string]error{}
	rep, err := f.install(t, func(c *Command) {
		c.Phase = func(label string) {
			switch label {
			case "Download and verify node files", "Check the sandbox runtime", "Start the node service":
				got[label] = helperAcquire(t, f)
			}
		}
	})
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("the rerun: %v\n%s", err, f.out.String())
	}
	for _, label := range []string{"Download and verify node files", "Check the sandbox runtime"} {
		if e, ok := got[label]; !ok || !errors.Is(e, noderoot.ErrInstallLocked) {
			t.Errorf("the helper at %q: %v, want refused for install.lock", label, e)
		}
	}
	if e, ok := got["Start the node service"]; !ok || e != nil {
		t.Errorf("the helper once the rerun registered: %v (ran: %v), want install.lock free", e, ok)
	}
}
