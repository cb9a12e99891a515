//go:build e2e

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
)

// distroHosts are the hosts of make e2e-distros: each Debian release the
// mirror serves, by its systemd and shadow-utils (bullseye 247 / 4.8.1,
// bookworm 252 / 4.13, trixie 257 / 4.17, sid and forky newer), and two
// buses besides dbus-daemon: dbus-broker, and none (systemd reached over
// its private socket only). OAC_E2E_DISTROS selects them by name,
// comma-separated; unset, the four suites run.
var distroHosts = []struct {
	name, suite string
	bus         testhost.Bus
}{
	{"bullseye", "bullseye", testhost.BusDaemon},
	{"bookworm", "bookworm", testhost.BusDaemon},
	{"trixie", "trixie", testhost.BusDaemon},
	{"sid", "sid", testhost.BusDaemon},
	{"forky", "forky", testhost.BusDaemon},
	{"trixie-dbus-broker", "trixie", testhost.BusBroker},
	{"trixie-no-bus", "trixie", testhost.BusNone},
}

const distrosDefault = "bullseye,bookworm,trixie,sid"

// TestDistros runs the operator's whole lifecycle (lifecycle) in a
// test host booted from a rootfs of each selected release, and compares
// the host after the uninstallation with before: account databases, /etc,
// /var/lib, /var/log, the units systemd knows, the cgroups, and the
// machine's Docker networks of the installation.
func TestDistros(t *testing.T) {
	sel := os.Getenv("OAC_E2E_DISTROS")
	if sel == "" {
		sel = distrosDefault
	}
	want := map[string]bool{}
	for _, n := range strings.Split(sel, ",") {
		want[strings.TrimSpace(n)] = true
	}
	if os.Geteuid() != 0 {
		t.Skip("end-to-end: needs root (a private systemd, accounts and units)")
	}
	if _, err := os.Stat("/var/run/docker.sock"); err != nil {
		t.Skip("end-to-end: needs the machine's Docker Engine")
	}
	bin := buildAll(t)
	var times []string
	for _, d := range distroHosts {
		if !want[d.name] {
			continue
		}
		delete(want, d.name)
		t.Run(d.name, func(t *testing.T) {
			start := time.Now()
			root := testhost.Rootfs(t, d.suite, d.bus)
			built := time.Since(start)
			core := startDevcore(t, bin)
			// The test's temporary directory (the binaries, Core's CA, the
			// operator's HOME) at the same path inside.
			h := testhost.StartWith(t, testhost.Options{Rootfs: root, Binds: []string{filepath.Dir(bin), filepath.Dir(core.data)}})
			t.Cleanup(func() { cleanupEngine(t, core.installationID) })
			// The host as an operator's is before an install: booted to
			// the network targets with the system bus running (the test
			// host boots basic.target only and activates the bus on
			// demand) and reloaded since boot, so that the comparison
			// shows what the installation left, not what a first reload
			// or the bus's activation starts.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if r, err := h.Exec(ctx, "sh", "-c", "systemctl start network-online.target && if systemctl cat dbus.service >/dev/null 2>&1; then systemctl start dbus.service; fi && systemctl daemon-reload"); err != nil || r.Status != 0 {
				t.Fatalf("warming the host: exit %d %v: %s", r.Status, err, r.Stderr)
			}
			before := distroHostState(t, h, core.installationID)
			lifecycle(t, bin, core, h, d.bus != testhost.BusNone)
			after := distroHostState(t, h, core.installationID)
			if d := treetest.DiffLines(before, after); len(d) > 0 {
				t.Errorf("the host after the uninstallation differs from before:\n%s", strings.Join(d, "\n"))
			}
			times = append(times, d.name+": rootfs "+built.Round(time.Millisecond).String()+", lifecycle "+(time.Since(start)-built).Round(time.Millisecond).String())
		})
	}
	for n := range want {
		t.Errorf("OAC_E2E_DISTROS names %q, not one of the hosts", n)
	}
	t.Logf("times:\n%s", strings.Join(times, "\n"))
}

// distroHostState describes what an installation may change on the host
// and an uninstallation must restore: every entry of /etc, /var/lib and
// /var/log with its mode, owner, size and content (the account databases
// among them), the units systemd has loaded and their files, the cgroups
// below the host's root, and the machine's Docker networks of the
// installation. Left out: the installer's own records of the installation
// (/var/lib/oac-node-install, which keep it known as uninstalled, and
// their backups of the account databases, /etc/passwd- and co.) and
// /var/log/journal (journald is masked in a test host).
func distroHostState(t *testing.T, h *testhost.Host, id string) treetest.Tree {
	t.Helper()
	root := filepath.Dir(h.Etc())
	skip := func(p string) bool {
		rel, _ := filepath.Rel(root, p)
		switch rel {
		case "var/lib/oac-node-install", "var/log/journal", "etc/passwd-", "etc/group-", "etc/shadow-", "etc/gshadow-", "etc/subuid-", "etc/subgid-":
			return true
		}
		return false
	}
	o := treetest.Options{Owner: true, Skip: skip}
	tree := treetest.SnapshotPaths(t, o, filepath.Join(root, "etc"), filepath.Join(root, "var/lib"), filepath.Join(root, "var/log"))
	out := treetest.Tree{}
	for p, v := range tree {
		rel, _ := filepath.Rel(root, p)
		out["/"+rel] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, q := range []struct{ key, script string }{
		{"units", "systemctl list-units --all --plain --no-legend --no-pager | awk '{print $1, $2, $3}'"},
		{"unit files", "systemctl list-unit-files --plain --no-legend --no-pager | awk '{print $1, $2}'"},
		// Slices are left out: a slice's cgroup stays once a unit in it
		// ran (system.slice on a host whose first service is the node);
		// every unit's own cgroup is compared.
		{"cgroups", "find /sys/fs/cgroup -mindepth 1 -type d ! -name '*.slice' | sort"},
	} {
		r, err := h.Exec(ctx, "sh", "-c", q.script)
		if err != nil || r.Status != 0 {
			t.Fatalf("%s inside: exit %d %v: %s", q.key, r.Status, err, r.Stderr)
		}
		lines := strings.Split(strings.TrimSpace(string(r.Stdout)), "\n")
		sort.Strings(lines)
		for _, l := range lines {
			if l != "" {
				out[q.key+": "+l] = "present"
			}
		}
	}
	nets, err := exec.Command("docker", "network", "ls", "--format", "{{.Name}}", "--filter", "name=oac-node-"+id).Output()
	if err != nil {
		t.Fatalf("docker network ls: %v", err)
	}
	for _, n := range strings.Fields(string(nets)) {
		out["docker network: "+n] = "present"
	}
	return out
}
