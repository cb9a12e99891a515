package install

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
)

const testID = "0b9e8c4e-4f0a-4f7e-9d55-2d5b0f0c1a11"

type fakeEngine struct {
	info docker.HostInfo
	err  error
	nets map[string]bool
}

func (f *fakeEngine) Info(context.Context) (docker.HostInfo, error) { return f.info, f.err }

func (f *fakeEngine) NetworkInspect(_ context.Context, name string) (docker.Network, error) {
	if f.nets[name] {
		return docker.Network{Name: name}, nil
	}
	return docker.Network{}, fmt.Errorf("%s: %w", name, docker.ErrNotFound)
}

// testHost is a host root with systemd running, a docker group (gid 4242)
// and the engine's socket 0660 root:docker.
func testHost(t *testing.T) (string, *Preflight) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the test socket its group")
	}
	root := t.TempDir()
	for _, d := range []string{"run/systemd/system", "etc", "var/run", "var/lib/oac-node"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\ndocker:x:4242:\nkvm:x:4343:\nstaff:x:50:\n"), 0o644)
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	sock := filepath.Join(root, "var/run/docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	os.Chown(sock, 0, 4242)
	os.Chmod(sock, 0o660)
	p := &Preflight{Host: layout.Host{Root: root}, InstallationID: testID, Provider: "docker", NewNode: true, CPUs: 2, MemoryMiB: 1024,
		Machine: "x86_64", Engine: &fakeEngine{info: docker.HostInfo{NCPU: 4, MemTotal: 8 << 30, MemoryLimit: true, CPUCfsQuota: true}, nets: map[string]bool{}}}
	return root, p
}

func TestPreflightPassesOnAGoodHost(t *testing.T) {
	_, p := testHost(t)
	checks := p.Run(context.Background())
	if err := FirstRefusal(checks); err != nil {
		t.Fatal(err)
	}
	if len(checks) < 8 {
		t.Fatalf("only %d checks ran", len(checks))
	}
}

func TestPreflightRefusals(t *testing.T) {
	other := "11111111-2222-4333-8444-555555555555"
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, root string, p *Preflight)
		want  string
	}{
		{"not amd64", func(t *testing.T, root string, p *Preflight) { p.Machine = "aarch64" }, "linux/amd64"},
		{"no systemd", func(t *testing.T, root string, p *Preflight) { os.RemoveAll(filepath.Join(root, "run/systemd")) }, "systemd is not running"},
		{"selinux enforcing", func(t *testing.T, root string, p *Preflight) {
			os.MkdirAll(filepath.Join(root, "sys/fs/selinux"), 0o755)
			os.WriteFile(filepath.Join(root, "sys/fs/selinux/enforce"), []byte("1"), 0o644)
		}, "SELinux is enforcing"},
		{"token in the environment", func(t *testing.T, root string, p *Preflight) { p.Environ = []string{"OAC_ENROLLMENT_TOKEN=x"} }, "OAC_ENROLLMENT_TOKEN"},
		{"another Core", func(t *testing.T, root string, p *Preflight) {
			os.MkdirAll(filepath.Join(root, "etc/oac-node"), 0o755)
			os.WriteFile(filepath.Join(root, "etc/oac-node", other+".json"), []byte("{}"), 0o644)
		}, "another Core"},
		{"original installer's records", func(t *testing.T, root string, p *Preflight) {
			os.MkdirAll(filepath.Join(root, "etc/oac-node"), 0o755)
			os.WriteFile(filepath.Join(root, "etc/oac-node/account.json"), []byte("{}"), 0o644)
		}, "account.json"},
		{"older product unit", func(t *testing.T, root string, p *Preflight) {
			os.MkdirAll(filepath.Join(root, "etc/systemd/system"), 0o755)
			os.WriteFile(filepath.Join(root, "etc/systemd/system/parsar-node-"+testID+".service"), nil, 0o644)
		}, "previous installer"},
		{"older product node root", func(t *testing.T, root string, p *Preflight) {
			os.MkdirAll(filepath.Join(root, "var/lib/oac-node/.parsar/nodes", testID), 0o700)
		}, "previous installer"},
		{"no docker", func(t *testing.T, root string, p *Preflight) { os.Remove(filepath.Join(root, "var/run/docker.sock")) }, "Docker is not installed"},
		{"socket of group root", func(t *testing.T, root string, p *Preflight) {
			os.Chown(filepath.Join(root, "var/run/docker.sock"), 0, 0)
		}, "group root"},
		{"socket of another group", func(t *testing.T, root string, p *Preflight) {
			os.Chown(filepath.Join(root, "var/run/docker.sock"), 0, 50)
		}, "group staff"},
		{"socket not group writable", func(t *testing.T, root string, p *Preflight) {
			os.Chmod(filepath.Join(root, "var/run/docker.sock"), 0o640)
		}, "not group read-write"},
		{"engine down", func(t *testing.T, root string, p *Preflight) {
			p.Engine.(*fakeEngine).err = errors.New("connection refused")
		}, "does not answer"},
		{"no limits", func(t *testing.T, root string, p *Preflight) { p.Engine.(*fakeEngine).info.CPUCfsQuota = false }, "cannot limit"},
		{"rootless", func(t *testing.T, root string, p *Preflight) { p.Engine.(*fakeEngine).info.Rootless = true }, "rootless"},
		{"too small", func(t *testing.T, root string, p *Preflight) { p.CPUs = 8 }, "this host has 4 CPUs and 8192 MiB of memory; each sandbox needs 8 CPUs"},
		{"network exists", func(t *testing.T, root string, p *Preflight) { p.Engine.(*fakeEngine).nets["oac-node-"+testID] = true }, "network oac-node-"},
		{"unknown provider", func(t *testing.T, root string, p *Preflight) { p.Provider = "e2b" }, "not a node provider"},
		{"no kvm", func(t *testing.T, root string, p *Preflight) {
			p.Provider = "microsandbox"
			p.HostCPUs, p.HostMemoryMiB = 4, 8192
		}, "KVM is not available"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, p := testHost(t)
			tc.setup(t, root, p)
			before := treetest.Snapshot(t, root, treetest.Options{})
			err := FirstRefusal(p.Run(context.Background()))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if d := treetest.Diff(before, treetest.Snapshot(t, root, treetest.Options{})); d != "" {
				t.Fatalf("preflight changed the host:\n%s", d)
			}
		})
	}
}

// A known node may have its own record and network.
func TestPreflightKnownNode(t *testing.T) {
	root, p := testHost(t)
	p.NewNode = false
	os.MkdirAll(filepath.Join(root, "etc/oac-node"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/oac-node", testID+".json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(root, "etc/oac-node/installer.db"), nil, 0o600)
	p.Engine.(*fakeEngine).nets["oac-node-"+testID] = true
	if err := FirstRefusal(p.Run(context.Background())); err != nil {
		t.Fatal(err)
	}
}

// recordName takes the names the one-Core check always took: <id>.json
// with a canonical (lowercase, hyphenated) installation id, nothing else.
func TestRecordName(t *testing.T) {
	for name, want := range map[string]bool{
		testID + ".json": true,
		"00000000-0000-0000-0000-000000000000.json":       true,
		strings.ToUpper(testID) + ".json":                 false,
		testID + ".json\n":                                false,
		testID + ".env":                                   false,
		testID:                                            false,
		"x" + testID + ".json":                            false,
		testID[:35] + "g.json":                            false,
		strings.ReplaceAll(testID, "-", "") + "0000.json": false,
		"account.json":                                    false,
		"installer.db":                                    false,
		".json":                                           false,
	} {
		if got := recordName(name); got != want {
			t.Errorf("recordName(%q) = %v, want %v", name, got, want)
		}
	}
}
