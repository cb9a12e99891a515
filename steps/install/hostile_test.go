package install

import (
	"context"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestEnsureHomeNeverChangesALinksTarget: a home that is a symbolic link
// (to a directory of root's) is refused, and while another process swaps
// the home between a directory and such a link, ensureHome never changes
// the target's owner or mode.
func TestEnsureHomeNeverChangesALinksTarget(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: gives the home to another uid")
	}
	base := t.TempDir()
	target := filepath.Join(base, "etc")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(target, 0o755)
	home := filepath.Join(base, "oac-node")
	if err := os.Symlink(target, home); err != nil {
		t.Fatal(err)
	}
	checkTarget := func() {
		t.Helper()
		var st unix.Stat_t
		if err := unix.Stat(target, &st); err != nil || st.Uid != 0 || st.Mode&0o7777 != 0o755 {
			t.Fatalf("the link's target changed: uid %d mode %o %v", st.Uid, st.Mode&0o7777, err)
		}
	}
	if err := ensureHome(home, 65534, 65534); err == nil {
		t.Fatal("a home that is a link was accepted")
	} else {
		t.Logf("refused: %v", err)
	}
	checkTarget()

	// Swap the home between a directory and the link while ensureHome runs.
	os.Remove(home)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		tmpLink, tmpDir := home+".link", home+".dir"
		for !stop.Load() {
			os.Symlink(target, tmpLink)
			os.Rename(tmpLink, home) // the home is now the link
			os.Mkdir(tmpDir, 0o700)
			os.Remove(home)
			os.Rename(tmpDir, home) // and a directory again
		}
	}()
	deadline := time.Now().Add(time.Second)
	for i := 0; i < 3000 && time.Now().Before(deadline); i++ {
		ensureHome(home, 65534, 65534)
	}
	stop.Store(true)
	<-done
	checkTarget()
}

// TestPreflightDoesNotFollowALinkInTheHome: the older product's node root
// is looked for in the account's home through no link: a .parsar that
// points at a directory of root's holding nodes/<id> is refused as a
// link, not taken for the older product's node root.
func TestPreflightDoesNotFollowALinkInTheHome(t *testing.T) {
	root, p := testHost(t)
	elsewhere := filepath.Join(root, "elsewhere")
	if err := os.MkdirAll(filepath.Join(elsewhere, "nodes", testID), 0o700); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(p.Host.Home(), 0o700)
	if err := os.Symlink(elsewhere, filepath.Join(p.Host.Home(), ".parsar")); err != nil {
		t.Fatal(err)
	}
	err := FirstRefusal(p.Run(context.Background()))
	if err == nil || !strings.Contains(err.Error(), "symbolic link") || strings.Contains(err.Error(), "previous installer") || !strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
		t.Fatalf("got %v, want a refusal of the link", err)
	}
}

// TestRerunOnAHostileNodeRoot installs a node, plants in its node root what
// the service account could write there, and reruns the command (no
// token): the rerun returns (no FIFO or device blocks it), refuses or
// repairs, prints no terminal control, and never changes the link's
// target.
func TestRerunOnAHostileNodeRoot(t *testing.T) {
	fifo := func(p string) error { return unix.Mkfifo(p, 0o600) }
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, root, victim string)
	}{
		{"node root mode 0777", func(t *testing.T, root, _ string) { os.Chmod(root, 0o777) }},
		{"node root a link", func(t *testing.T, root, victim string) {
			os.Rename(root, root+".moved")
			os.Symlink(filepath.Dir(victim), root)
		}},
		{"journals a link to root's journals", func(t *testing.T, root, _ string) {
			os.RemoveAll(filepath.Join(root, "journals"))
			os.Symlink(filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(root))))), "oac-node-install"), filepath.Join(root, "journals"))
		}},
		{"provider.json a FIFO", func(t *testing.T, root, _ string) {
			os.Remove(filepath.Join(root, "provider.json"))
			fifo(filepath.Join(root, "provider.json"))
		}},
		{"registered.json a link", func(t *testing.T, root, victim string) {
			os.Remove(filepath.Join(root, "registered.json"))
			os.Symlink(victim, filepath.Join(root, "registered.json"))
		}},
		{"identity.json a FIFO", func(t *testing.T, root, _ string) {
			p := filepath.Join(root, "state", "node", "identity.json")
			os.Remove(p)
			fifo(p)
		}},
		{"identity.json escapes and duplicate keys", func(t *testing.T, root, _ string) {
			p := filepath.Join(root, "state", "node", "identity.json")
			os.WriteFile(p, []byte(`{"node_id":"a\u001b[2J\nnext: sudo sh","node_id":"b"}`), 0o600)
		}},
		{"identity.json huge", func(t *testing.T, root, _ string) {
			os.Truncate(filepath.Join(root, "state", "node", "identity.json"), 8<<30)
		}},
		{"provider.json huge", func(t *testing.T, root, _ string) {
			os.Truncate(filepath.Join(root, "provider.json"), 8<<30)
		}},
		{"registered.json a device", func(t *testing.T, root, _ string) {
			os.Remove(filepath.Join(root, "registered.json"))
			unix.Mknod(filepath.Join(root, "registered.json"), unix.S_IFCHR|0o600, int(unix.Mkdev(1, 5)))
		}},
		{"credential a hard link", func(t *testing.T, root, victim string) {
			p := filepath.Join(root, "state", "node", "identity.json")
			os.Remove(p)
			os.Link(victim, p)
		}},
		{"generation helper a link", func(t *testing.T, root, victim string) {
			os.Remove(filepath.Join(root, "generation-preparer"))
			os.Symlink(victim, filepath.Join(root, "generation-preparer"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each on its own host root; the installations dominate
			f := newRunFixture(t)
			f.installed(t)
			victim := filepath.Join(f.base, "victim", "shadow")
			os.MkdirAll(filepath.Dir(victim), 0o755)
			if err := os.WriteFile(victim, []byte("root-secret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			var before unix.Stat_t
			unix.Lstat(victim, &before)
			root := f.host.NodeRoot(generationtest.InstallationID)
			tc.plant(t, root, victim)
			u, _ := accounts.Under(f.host.Root).LookupUser("oac-node")
			filepath.Walk(f.host.Home(), func(p string, fi os.FileInfo, err error) error {
				var st unix.Stat_t
				if err == nil && unix.Lstat(p, &st) == nil && (st.Nlink == 1 || fi.IsDir()) {
					os.Lchown(p, u.UID, u.GID) // not the hard link's root-owned inode
				}
				return nil
			})
			etc := treetest.Snapshot(t, filepath.Join(f.host.Root, "etc"), treetest.Options{})

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				c := f.command()
				_, err := Run(ctx, c)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(90 * time.Second):
				t.Fatal("the rerun did not return within 90 s (blocked on a hostile file?)")
			}
			out := f.out.String()
			t.Logf("rerun: %v\n%s", err, out)
			for _, c := range []byte(out + errText(err)) {
				if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
					t.Errorf("the output holds the control byte %#x", c)
					break
				}
			}
			if strings.Contains(out+errText(err), "root-secret") {
				t.Error("the output prints the link target's bytes")
			}
			var after unix.Stat_t
			unix.Lstat(victim, &after)
			if data, _ := os.ReadFile(victim); string(data) != "root-secret\n" || after.Mtim != before.Mtim || after.Uid != 0 || after.Mode != before.Mode {
				t.Errorf("the link's target changed: %q uid %d mode %o", data, after.Uid, after.Mode)
			}
			// A hostile node root is refused before the first change.
			if err != nil && !strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
				t.Errorf("the rerun's refusal came after a change: %v", err)
			}
			if err != nil && strings.Contains(workflow.Message(err), "Nothing was changed.") {
				if d := treetest.Diff(etc, treetest.Snapshot(t, filepath.Join(f.host.Root, "etc"), treetest.Options{})); d != "" {
					t.Errorf("a refusal changed /etc:\n%s", d)
				}
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestSudoUserNodeDoesNotFollowALink: the sudo user's home is looked into
// through no link: a .oac there that points at a directory holding
// nodes/<id> is neither followed nor taken for a node root; the check
// says it skipped it.
func TestSudoUserNodeDoesNotFollowALink(t *testing.T) {
	root, p := testHost(t)
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n"), 0o644)
	elsewhere := filepath.Join(root, "elsewhere")
	os.MkdirAll(filepath.Join(elsewhere, "nodes", testID), 0o700)
	os.MkdirAll(filepath.Join(root, "home/alice"), 0o700)
	if err := os.Symlink(elsewhere, filepath.Join(root, "home/alice/.oac")); err != nil {
		t.Fatal(err)
	}
	p.Environ = []string{"SUDO_USER=alice"}
	c := p.sudoUserNode()
	if c.Err != nil || !strings.Contains(c.Skipped, "symbolic link") {
		t.Fatalf("check %+v: want it skipped, the link not followed", c)
	}
}
