package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/steps/layout"
	"github.com/openagentcore/oac-node-install/steps/lease"
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

	var out, errOut bytes.Buffer
	if code := run([]string{"leases", "--host-root", root, "--json"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got struct {
		Nodes []nodeInspection `json:"nodes"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(got.Nodes) != 1 || len(got.Nodes[0].Generations) != 2 {
		t.Fatalf("want one node with two generations: %s", out.String())
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

	// The text form names the states and the next steps.
	out.Reset()
	if code := run([]string{"leases", "--host-root", root}, nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"generation 1", "ok", "shared", "generation 2", "identity-missing", "next:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, out.String())
		}
	}
}
