package generation

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/steps/host/microsandbox"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// TestMicrosandboxInheritsInstallLock: once the helper holds install.lock,
// every msb process it starts inherits that lock (microsandbox.CLI.Inherit),
// so that a helper killed during a load leaves the node locked until msb is
// done.
func TestMicrosandboxInheritsInstallLock(t *testing.T) {
	n, _, other := dockerNode(t)
	e, err := noderoot.NewEnv(n.options(noderoot.ActionPrepare, 2, other.Spec(t, release.ProviderDocker, 2)))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cli := func() *microsandbox.CLI {
		c, ok := e.Microsandbox("/x/msb", "/x/store", "/x/libkrunfw.so").(*microsandbox.CLI)
		if !ok {
			t.Fatalf("Microsandbox is not the msb CLI")
		}
		return c
	}
	if got := cli().Inherit; len(got) != 0 {
		t.Fatalf("before the lock is taken msb would inherit %d files", len(got))
	}
	if err := e.Acquire(); err != nil {
		t.Fatal(err)
	}
	inherit := cli().Inherit
	if len(inherit) != 1 {
		t.Fatalf("msb inherits %d files, want install.lock", len(inherit))
	}
	var held, named unix.Stat_t
	if err := unix.Fstat(int(inherit[0].Fd()), &held); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(n.node.InstallLock(), &named); err != nil {
		t.Fatal(err)
	}
	if held.Dev != named.Dev || held.Ino != named.Ino {
		t.Errorf("msb inherits %s (inode %d), not install.lock (inode %d)", inherit[0].Name(), held.Ino, named.Ino)
	}
}
