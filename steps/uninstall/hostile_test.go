package uninstall

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
)

// victimDir is a directory of root's outside the node account's files
// that a hostile home points at: what it holds must stay as it is.
type victimDir struct {
	dir    string
	before map[string]string
}

func newVictimDir(t *testing.T, f *hostFixture) *victimDir {
	t.Helper()
	dir := filepath.Join(f.base, "victim") // the account can traverse the base
	must(t, os.Mkdir(dir, 0o755))
	// What a node root, a nodes directory and a home hold, as root's.
	for _, d := range []string{id + "/state/node", "nodes/" + id + "/state", ".oac/nodes/" + id} {
		must(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	for _, p := range []string{"shadow", id + "/registered.json", "nodes/" + id + "/registered.json", ".oac/nodes/" + id + "/registered.json"} {
		writeFile(t, filepath.Join(dir, p), "root-secret\n", 0o644)
	}
	v := &victimDir{dir: dir, before: treetest.Snapshot(t, dir, victimOptions)}
	return v
}

// accountVictimDir is newVictimDir with every entry the account's own.
func accountVictimDir(t *testing.T, f *hostFixture) *victimDir {
	t.Helper()
	v := newVictimDir(t, f)
	u := f.user(t)
	must(t, filepath.Walk(v.dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, u.UID, u.GID)
	}))
	v.before = treetest.Snapshot(t, v.dir, victimOptions)
	return v
}

// victimOptions make a victim directory's snapshot show any change of
// its entries' bytes, modes, owners or mtimes.
var victimOptions = treetest.Options{Owner: true, MTime: true}

func (v *victimDir) check(t *testing.T) {
	t.Helper()
	if d := treetest.Diff(v.before, treetest.Snapshot(t, v.dir, victimOptions)); d != "" {
		t.Errorf("the link's target %s changed:\n%s", v.dir, d)
	}
}

// uninstallWithin runs the uninstallation, failing the test instead of
// hanging when it does not return within a generous deadline.
func (f *hostFixture) uninstallWithin(t *testing.T, force bool) (*workflow.Report, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type result struct {
		rep *workflow.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := Run(ctx, f.command(force))
		done <- result{rep, err}
	}()
	select {
	case r := <-done:
		return r.rep, r.err
	case <-time.After(90 * time.Second):
		t.Fatal("the uninstallation did not return within 90 s (blocked on a hostile file?)")
	}
	return nil, nil
}

// TestUninstallOfAHostileHome plants in the installed node's home what the
// service account could write there (links to root's files and
// directories, FIFOs, devices, hard links, modes), then uninstalls: the
// node state goes without a link ever being followed, the targets'
// bytes and mtimes stay as they were, nothing outside the account's
// files changes, and nothing blocks.
func TestUninstallOfAHostileHome(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, f *hostFixture, v *victimDir)
	}{
		{"node root a link", func(t *testing.T, f *hostFixture, v *victimDir) {
			must(t, os.RemoveAll(f.host.NodeRoot(id)))
			must(t, os.Symlink(filepath.Join(v.dir, id), f.host.NodeRoot(id)))
		}},
		{"nodes a link", func(t *testing.T, f *hostFixture, v *victimDir) {
			nodes := filepath.Dir(f.host.NodeRoot(id))
			must(t, os.RemoveAll(nodes))
			must(t, os.Symlink(filepath.Join(v.dir, "nodes"), nodes))
		}},
		{".oac a link", func(t *testing.T, f *hostFixture, v *victimDir) {
			oac := filepath.Join(f.host.Home(), ".oac")
			must(t, os.RemoveAll(oac))
			must(t, os.Symlink(filepath.Join(v.dir, ".oac"), oac))
		}},
		{"files in the node root links, hard links, FIFOs and devices", func(t *testing.T, f *hostFixture, v *victimDir) {
			root := f.host.NodeRoot(id)
			must(t, os.Remove(filepath.Join(root, "registered.json")))
			must(t, os.Link(filepath.Join(v.dir, "shadow"), filepath.Join(root, "registered.json")))
			must(t, os.Symlink(filepath.Join(v.dir, "shadow"), filepath.Join(root, "provider.json.link")))
			must(t, os.Symlink(v.dir, filepath.Join(root, "state", "dirlink")))
			must(t, unix.Mkfifo(filepath.Join(root, "state", "node", "identity.json.fifo"), 0o600))
			must(t, unix.Mknod(filepath.Join(root, "journals.zero"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 5))))
			must(t, os.Chmod(root, 0o777))
		}},
		{"directories the account cannot write or read", func(t *testing.T, f *hostFixture, v *victimDir) {
			root := f.host.NodeRoot(id)
			for _, d := range []string{"ro/sub", "none"} {
				must(t, os.MkdirAll(filepath.Join(root, "runtime", d), 0o700))
			}
			writeFile(t, filepath.Join(root, "runtime", "ro", "sub", "f"), "x", 0o400)
			writeFile(t, filepath.Join(root, "runtime", "none", "f"), "x", 0o600)
			t.Cleanup(func() { os.Chmod(filepath.Join(root, "runtime", "none"), 0o700) })
			must(t, os.Chmod(filepath.Join(root, "runtime", "ro", "sub"), 0o500))
			must(t, os.Chmod(filepath.Join(root, "runtime", "ro"), 0o500))
			must(t, os.Chmod(filepath.Join(root, "runtime", "none"), 0))
		}},
		{"home a link", func(t *testing.T, f *hostFixture, v *victimDir) {
			home := f.host.Home()
			must(t, os.Rename(home, home+".moved"))
			must(t, os.Symlink(v.dir, home))
		}},
		{"root's lock and bookkeeping names in the home", func(t *testing.T, f *hostFixture, v *victimDir) {
			for _, p := range []string{f.host.HostLock(), f.host.Bookkeeping()} {
				must(t, os.Symlink(filepath.Join(v.dir, "shadow"), filepath.Join(f.host.Home(), filepath.Base(p))))
			}
			must(t, unix.Mkfifo(filepath.Join(f.host.Home(), "installer.db.fifo"), 0o600))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newHostFixture(t)
			f.install(t)
			// The target is the account's own, outside its home: even
			// where the account could remove it, the removal of the node
			// state never reaches it through a link.
			v, u := accountVictimDir(t, f), f.user(t)
			tc.plant(t, f, v)
			if out, err := exec.Command("chown", "-h", "-R", "--", fmt.Sprintf("%d:%d", u.UID, u.GID), f.host.Home()).CombinedOutput(); err != nil && tc.name != "home a link" {
				t.Fatalf("chown: %v %s", err, out)
			}
			outside := treetest.Snapshot(t, filepath.Join(f.host.Root, "etc"), treetest.Options{})
			rep, err := f.uninstallWithin(t, false)
			out := f.out.String()
			forced := err != nil
			if err != nil {
				// A link stands where the node's identity is read: the
				// run refuses, changing nothing, and --force goes on.
				t.Logf("refused: %v\n%s", err, out)
				if !strings.Contains(err.Error(), "symbolic link") || !strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
					t.Errorf("the refusal does not say why: %v", err)
				}
				if d := treetest.Diff(outside, treetest.Snapshot(t, filepath.Join(f.host.Root, "etc"), treetest.Options{})); d != "" {
					t.Errorf("the refused run changed /etc:\n%s", d)
				}
				f.out.Reset()
				rep, err = f.uninstallWithin(t, true)
				out = f.out.String()
			}
			if err != nil {
				t.Logf("--force: %v\n%s", err, out)
			} else if want := map[bool]workflow.Condition{false: workflow.Complete, true: workflow.Incomplete}[rep.AccountKept() != ""]; rep.Condition != want {
				t.Errorf("condition %s, want %s\n%s", rep.Condition, want, out)
			}
			v.check(t)
			for _, c := range out + errString(err) {
				if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
					t.Errorf("the output holds the control byte %#x:\n%q", c, out)
					break
				}
			}
			if bytes.Contains([]byte(out+errString(err)), []byte("root-secret")) {
				t.Errorf("the output prints the link target's bytes:\n%s", out)
			}
			if err == nil {
				if _, lerr := os.Lstat(f.host.NodeRoot(id)); lerr == nil {
					t.Errorf("the node root %s remains", f.host.NodeRoot(id))
				}
				// --force keeps the microsandbox store, and so the
				// account and its home.
				if _, lerr := os.Lstat(f.host.Home()); lerr == nil && !forced {
					t.Errorf("the home the installer created remains")
				}
				if d := f.leftovers(t); d != "" && !forced {
					t.Errorf("the host differs from before the installation:\n%s", d)
				}
			} else if tc.name != "home a link" { // a home only root could replace stays refused
				t.Errorf("uninstall --force failed: %v\n%s", err, out)
			}
		})
	}
}

// TestUninstallWhileTheNodesDirectoryIsSwapped: while the uninstallation
// runs, the service account swaps .oac/nodes between the real directory
// and a link to a directory of its own elsewhere; whatever the run's
// outcome, what the link points at stays as it is.
func TestUninstallWhileTheNodesDirectoryIsSwapped(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	v := accountVictimDir(t, f)
	nodes := filepath.Dir(f.host.NodeRoot(id))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			os.Rename(nodes, nodes+".real")
			os.Symlink(filepath.Join(v.dir, "nodes"), nodes)
			os.Remove(nodes)
			os.Rename(nodes+".real", nodes)
		}
	}()
	for range 3 {
		f.out.Reset()
		rep, err := f.uninstallWithin(t, true)
		t.Logf("%v %v", rep, err)
	}
	close(stop)
	<-done
	v.check(t)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
