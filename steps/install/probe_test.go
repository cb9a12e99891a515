package install

import (
	"context"
	"errors"
	"fmt"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
)

// Run returns every check: a check whose prerequisite failed is there,
// skipped, and the first failure is still the one install refuses with.
func TestPreflightReturnsEveryCheck(t *testing.T) {
	root, p := testHost(t)
	os.Remove(filepath.Join(root, "var/run/docker.sock"))
	checks := p.Run(context.Background())
	want := map[string]string{checkDockerLimits: "socket check failed", checkCapacity: "socket check failed", checkDockerNetwork: "socket check failed"}
	for _, c := range checks {
		if w, ok := want[c.Name]; ok {
			if c.Failed() || !strings.Contains(c.Skipped, w) {
				t.Errorf("%s: %+v, want skipped because %s", c.Name, c, w)
			}
			delete(want, c.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("missing checks %v in %+v", want, checks)
	}
	if err := FirstRefusal(checks); err == nil || !strings.Contains(err.Error(), "Docker is not installed") {
		t.Fatalf("first refusal %v", err)
	}

	_, p = testHost(t)
	p.Engine.(*fakeEngine).err = errors.New("connection refused")
	checks = p.Run(context.Background())
	var failed, skipped []string
	for _, c := range checks {
		if c.Failed() {
			failed = append(failed, c.Name)
		}
		if c.Skipped != "" {
			skipped = append(skipped, c.Name)
		}
	}
	if fmt.Sprint(failed) != "["+checkDockerLimits+"]" || fmt.Sprint(skipped) != fmt.Sprint([]string{checkCapacity, checkDockerNetwork}) {
		t.Fatalf("failed %v, skipped %v", failed, skipped)
	}
}

// probeHost is testHost with the node recorded: a host record, the
// bookkeeping (a real bbolt database) and the adopted account.
func probeHost(t *testing.T) (string, Probe) {
	root, p := testHost(t)
	os.MkdirAll(filepath.Join(root, "etc/oac-node"), 0o755)
	h := layout.Host{Root: root}
	os.WriteFile(filepath.Join(root, "etc/oac-node", testID+".json"), []byte(`{"format":1,"installation_id":"`+testID+`","provider":"docker","core_url":"https://core.example.com","node_root":"`+h.NodeRoot(testID)+`","unit":"`+h.Unit(testID)+`"}`), 0o644)
	db, err := bookkeeping.Open(filepath.Join(root, "etc/oac-node/installer.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PutAccount(bookkeeping.Account{Name: "oac-node", UID: 990}); err != nil {
		t.Fatal(err)
	}
	if err := db.PutInstallation(bookkeeping.Installation{ID: testID, Provider: "docker", CoreURL: "https://core.example.com",
		NodeRoot: h.NodeRoot(testID), Unit: h.Unit(testID), EnvFile: h.EnvFile(testID)}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\noac-node:x:990:990::/var/lib/oac-node:/usr/sbin/nologin\n"), 0o644)
	os.WriteFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\ndocker:x:4242:oac-node\nkvm:x:4343:\nstaff:x:50:\noac-node:x:990:\n"), 0o644)
	return root, Probe{Options: Options{InstallationID: testID, CoreURL: "https://core.example.com", SourceURL: "https://console.example.com"},
		Host: p.Host, Machine: "x86_64", Engine: p.Engine}
}

// probeSnapshot records every file under the host root with its mode,
// mtime and content's sha256, so that a change of a single byte (bbolt's
// included) shows.
var probeSnapshot = treetest.Options{MTime: true}

func names(checks []Check, pick func(Check) bool) []string {
	var out []string
	for _, c := range checks {
		if pick(c) {
			out = append(out, c.Name)
		}
	}
	return out
}

// A known node: the provider comes from its host record, every check
// passes but those that need what check never reads, and the host, its
// bbolt bookkeeping included, is byte for byte as before.
func TestProbeKnownNodeChangesNothing(t *testing.T) {
	root, pr := probeHost(t)
	before := treetest.Snapshot(t, root, probeSnapshot)
	checks := pr.Run(context.Background())
	if d := treetest.Diff(before, treetest.Snapshot(t, root, probeSnapshot)); d != "" {
		t.Fatalf("the probe changed the host:\n%s", d)
	}
	if f := names(checks, Check.Failed); len(f) > 0 {
		t.Fatalf("failed: %v in %+v", f, checks)
	}
	skipped := names(checks, func(c Check) bool { return c.Skipped != "" })
	if fmt.Sprint(skipped) != fmt.Sprint([]string{CheckConfigurationName, checkCapacity, CheckSpaceName}) {
		t.Fatalf("skipped %v", skipped)
	}
	for _, c := range checks {
		if strings.HasPrefix(c.Name, "KVM") || strings.Contains(c.Name, ": ") {
			t.Fatalf("checked another provider than the recorded docker: %+v", c)
		}
		if c.Name == checkCapacity && !strings.Contains(c.Skipped, "this host has 4 CPUs and 8192 MiB") {
			t.Fatalf("capacity: %q", c.Skipped)
		}
	}
}

// Every failure is reported, not only the first; the bookkeeping's account
// record takes part in the adoption rules.
func TestProbeReportsEveryFailure(t *testing.T) {
	root, pr := probeHost(t)
	os.MkdirAll(filepath.Join(root, "sys/fs/selinux"), 0o755)
	os.WriteFile(filepath.Join(root, "sys/fs/selinux/enforce"), []byte("1"), 0o644)
	os.Remove(filepath.Join(root, "var/run/docker.sock"))
	// The account was replaced since the installer recorded uid 990.
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\noac-node:x:991:990::/var/lib/oac-node:/usr/sbin/nologin\n"), 0o644)
	pr.Options.CoreURL = "https://other.example.com"
	before := treetest.Snapshot(t, root, probeSnapshot)
	checks := pr.Run(context.Background())
	if d := treetest.Diff(before, treetest.Snapshot(t, root, probeSnapshot)); d != "" {
		t.Fatalf("the probe changed the host:\n%s", d)
	}
	failed := names(checks, Check.Failed)
	want := []string{CheckHostRecordName, "SELinux not enforcing", "Docker socket", CheckAccountName}
	if fmt.Sprint(failed) != fmt.Sprint(want) {
		t.Fatalf("failed %v, want %v", failed, want)
	}
	for _, c := range checks {
		if c.Name == CheckAccountName && !strings.Contains(c.Err.Error(), "uid 991, but this host's records say the installer set up uid 990") {
			t.Fatalf("account: %v", c.Err)
		}
	}
}

// A new node without --provider is checked for both providers; without
// root the bookkeeping and the engine are skipped, saying why.
func TestProbeNewNodeBothProviders(t *testing.T) {
	root, pr := probeHost(t)
	os.Remove(filepath.Join(root, "etc/oac-node", testID+".json"))
	pr.NoEngine, pr.NoRoot = "needs root", "needs root"
	checks := pr.Run(context.Background())
	var docker, micro int
	for _, c := range checks {
		switch {
		case strings.HasPrefix(c.Name, "docker: "):
			docker++
			if c.Name != "docker: Docker socket" && c.Name != "docker: "+CheckSpaceName && c.Skipped != "needs root" {
				t.Errorf("%+v: want skipped for root", c)
			}
		case strings.HasPrefix(c.Name, "microsandbox: "):
			micro++
		case c.Name == CheckAccountName:
			if !strings.HasPrefix(c.Skipped, "needs root to read ") {
				t.Errorf("account: %+v", c)
			}
		case c.Name == CheckHostRecordName:
			if !strings.Contains(c.Skipped, "a new node") {
				t.Errorf("host record: %+v", c)
			}
		}
	}
	if docker != 5 || micro != 4 {
		t.Fatalf("%d docker and %d microsandbox checks in %+v", docker, micro, checks)
	}
}

// With Core's configuration (check's token), its provider is the one
// checked, alone, and the capacity check has the sandbox size: a size this
// host cannot run fails; the configuration check passes and names the
// provider.
func TestProbeWithCoreConfiguration(t *testing.T) {
	root, pr := probeHost(t)
	os.Remove(filepath.Join(root, "etc/oac-node", testID+".json"))
	pr.NoRoot = "needs root"
	pr.Configuration = &core.Configuration{InstallationID: testID, Provider: release.ProviderDocker, CoreURL: "https://core.example.com",
		Specification: &release.Specification{Resources: release.Resources{CPUs: 64, MemoryMiB: 1 << 20}}}
	checks := pr.Run(context.Background())
	var conf, capacity *Check
	for i, c := range checks {
		if strings.HasPrefix(c.Name, "microsandbox") || strings.HasPrefix(c.Name, "docker: ") {
			t.Errorf("a provider's check is named for it: %q", c.Name)
		}
		switch {
		case strings.HasPrefix(c.Name, CheckConfigurationName):
			conf = &checks[i]
		case strings.HasPrefix(c.Name, "capacity"):
			capacity = &checks[i]
		}
	}
	if conf == nil || conf.Failed() || conf.Skipped != "" || conf.Name != CheckConfigurationName+" (provider docker)" {
		t.Errorf("configuration check: %+v", conf)
	}
	if capacity == nil || !capacity.Failed() {
		t.Errorf("capacity check with a size the host lacks: %+v", capacity)
	}

	pr.Configuration, pr.ConfigurationErr = nil, errors.New("Core answered HTTP 401")
	checks = pr.Run(context.Background())
	if c := checks[1]; !strings.HasPrefix(c.Name, CheckConfigurationName) || c.Err == nil {
		t.Errorf("a configuration that could not be read: %+v", c)
	}
}
