//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
)

// fleetHosts is how many test hosts the fleet test drives.
const fleetHosts = 3

// fleetWorkDir is the role's work directory in the test hosts: under their
// private /var/lib, so that nothing of the role reaches the machine.
const fleetWorkDir = "/var/lib/oac-fleet-role"

// recapLine is one host's line of Ansible's PLAY RECAP.
var recapLine = regexp.MustCompile(`(?m)^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)`)

// recap is a play's counts per host.
type recap struct {
	lines   []string
	changed map[string]int
	bad     map[string]int // unreachable + failed
}

func parseRecap(out string) recap {
	r := recap{changed: map[string]int{}, bad: map[string]int{}}
	for _, m := range recapLine.FindAllStringSubmatch(out, -1) {
		r.lines = append(r.lines, strings.TrimSpace(m[0]))
		ch, _ := strconv.Atoi(m[3])
		un, _ := strconv.Atoi(m[4])
		fa, _ := strconv.Atoi(m[5])
		r.changed[m[1]] = ch
		r.bad[m[1]] += un + fa
	}
	return r
}

// TestEndToEndFleet runs the repository's Ansible role (deploy/ansible)
// against three test hosts: the install play installs a node on each (a
// token per host from Core's token API, the binary checked against the
// console's SHA256SUMS, the token on standard input), a second run of it
// changes nothing, and the uninstall play removes each node in Core and on
// its host. Each host has its own oac-devcore (its own installation): the
// test hosts share the machine's Docker Engine, on which a second node of
// one installation is refused (its network exists). make e2e-fleet runs it.
func TestEndToEndFleet(t *testing.T) {
	playbook, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Skip("fleet: needs ansible-playbook (apt-get install ansible)")
	}
	if os.Geteuid() != 0 {
		t.Skip("fleet: needs root (private systemd hosts, accounts and units)")
	}
	if _, err := os.Stat("/var/run/docker.sock"); err != nil {
		t.Skip("fleet: needs the machine's Docker Engine")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bin := buildAll(t)
	dir, _ := filepath.Abs("../../deploy/ansible")
	work := t.TempDir()

	var nodes []node
	var inv strings.Builder
	// nsenter's plugin runs modules with pipelining but does not say so;
	// this one does, so Ansible pipes every module (and the token among its
	// arguments) to the host's python instead of writing it to a file.
	plugins := filepath.Join(work, "connection_plugins")
	if err := os.MkdirAll(plugins, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plugins, "oac_nsenter.py"), []byte(nsenterPipelining(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	inv.WriteString("oac_nodes:\n  vars:\n    ansible_connection: oac_nsenter\n    ansible_become: false\n    oac_batch: 2\n" +
		"    ansible_python_interpreter: /usr/bin/python3\n    ansible_remote_tmp: /run/ansible-tmp\n" +
		"    oac_provider: docker\n    oac_work_dir: " + fleetWorkDir + "\n  hosts:\n")
	for i := range fleetHosts {
		core := startDevcore(t, bin)
		t.Cleanup(func() { cleanupEngine(t, core.installationID) })
		h := testhost.Start(t)
		key, err := os.ReadFile(filepath.Join(core.data, "admin-key"))
		if err != nil {
			t.Fatal(err)
		}
		n := node{name: fmt.Sprintf("fleet-%d", i+1), core: core, host: h}
		nodes = append(nodes, n)
		fmt.Fprintf(&inv, "    %s:\n      ansible_nsenter_pid: %d\n      oac_console_url: %s\n      oac_core_url: %s\n"+
			"      oac_core_ca: %s\n      oac_core_key: %s\n      oac_installation_id: %s\n",
			n.name, h.PID(), core.url, core.url, core.ca, strings.TrimSpace(string(key)), core.installationID)
	}
	inventory := filepath.Join(work, "inventory.yml")
	if err := os.WriteFile(inventory, []byte(inv.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	play := func(name string, flags ...string) recap {
		t.Helper()
		start := time.Now()
		cmd := exec.CommandContext(ctx, playbook, append([]string{"-i", inventory, "--forks", strconv.Itoa(fleetHosts), name}, flags...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "ANSIBLE_HOME="+filepath.Join(work, "ansible"), "ANSIBLE_LOCAL_TEMP="+filepath.Join(work, "tmp"),
			"ANSIBLE_NOCOLOR=1", "ANSIBLE_RETRY_FILES_ENABLED=0", "ANSIBLE_CONFIG="+filepath.Join(dir, "ansible.cfg"),
			"ANSIBLE_CONNECTION_PLUGINS="+plugins)
		out, err := cmd.CombinedOutput()
		r := parseRecap(string(out))
		t.Logf("%s %s (%s):\n%s", name, strings.Join(flags, " "), time.Since(start).Round(time.Second), strings.Join(r.lines, "\n"))
		if err != nil || len(r.lines) != fleetHosts {
			t.Fatalf("ansible-playbook %s: %v\n%s", name, err, out)
		}
		for host, bad := range r.bad {
			if bad != 0 {
				t.Fatalf("ansible-playbook %s: %s failed or was unreachable\n%s", name, host, out)
			}
		}
		scanSecrets(t, name, nodes, work)
		return r
	}
	status := func(n node) map[string]any {
		t.Helper()
		res, err := n.host.Exec(ctx, filepath.Join(bin, "oac-node-install"), "status", "--json", "--installation-id", n.core.installationID)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Installations []map[string]any `json:"installations"`
		}
		if err := json.Unmarshal(res.Stdout, &doc); err != nil || len(doc.Installations) != 1 {
			t.Fatalf("%s: status (exit %d): %v\n%s%s", n.name, res.Status, err, res.Stdout, res.Stderr)
		}
		return doc.Installations[0]
	}

	// Check mode on a fresh fleet: it says a change would be made and
	// makes none (no work directory, no installation).
	fresh := play("install.yml", "--check", "--diff")
	for _, n := range nodes {
		if fresh.changed[n.name] == 0 {
			t.Errorf("%s: --check on a fresh host reports no change", n.name)
		}
		if res, _ := n.host.Exec(ctx, "test", "-e", fleetWorkDir); res.Status == 0 {
			t.Errorf("%s: --check made the role's work directory %s", n.name, fleetWorkDir)
		}
	}
	// A wrong Core key: the token request is refused, reported once with
	// Core's answer (the key itself hidden), and nothing is installed.
	{
		cmd := exec.CommandContext(ctx, playbook, "-i", inventory, "--limit", nodes[0].name, "install.yml", "-e", "oac_core_key=not-the-key")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "ANSIBLE_HOME="+filepath.Join(work, "ansible"), "ANSIBLE_LOCAL_TEMP="+filepath.Join(work, "tmp"),
			"ANSIBLE_NOCOLOR=1", "ANSIBLE_RETRY_FILES_ENABLED=0", "ANSIBLE_CONFIG="+filepath.Join(dir, "ansible.cfg"),
			"ANSIBLE_CONNECTION_PLUGINS="+plugins)
		out, err := cmd.CombinedOutput()
		r := parseRecap(string(out))
		t.Logf("install.yml with a wrong Core key:\n%s", strings.Join(r.lines, "\n"))
		if err == nil || r.bad[nodes[0].name] == 0 || strings.Count(string(out), "Core's token API answered 401") != 1 || strings.Contains(string(out), "not-the-key") {
			t.Errorf("a wrong Core key: want one failure naming Core's 401 and never the key (%v)\n%s", err, out)
		}
	}
	first := play("install.yml")
	for _, n := range nodes {
		if first.changed[n.name] == 0 {
			t.Errorf("%s: the first run changed nothing", n.name)
		}
		if st := status(n); st["condition"] != "ok" {
			t.Errorf("%s: after the install: %v", n.name, st)
		}
	}
	second := play("install.yml")
	for _, n := range nodes {
		if second.changed[n.name] != 0 {
			t.Errorf("%s: the second run changed %d", n.name, second.changed[n.name])
		}
	}
	converged := play("install.yml", "--check", "--diff")
	for _, n := range nodes {
		if converged.changed[n.name] != 0 {
			t.Errorf("%s: --check on a converged host reports %d changes", n.name, converged.changed[n.name])
		}
	}
	// The service account of fleet-1 rewrites its identity.json to name
	// another node: the uninstall must still remove fleet-1's own node in
	// Core (root's record), and nothing else.
	forged := nodes[0]
	before := status(forged)
	rootNode := before["root_record"].(map[string]any)["node_id"].(string)
	identity := filepath.Join(fmt.Sprintf("/proc/%d/root", forged.host.PID()), layout.Host{}.NodeRoot(ident.InstallationID(forged.core.installationID)), "state/node/identity.json")
	data, err := os.ReadFile(identity)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(identity, []byte(strings.ReplaceAll(string(data), rootNode, fleetOtherNode)), 0o600); err != nil {
		t.Fatal(err)
	}
	if after := status(forged); after["root_record"].(map[string]any)["node_id"] != rootNode ||
		after["registration"].(map[string]any)["node_id"] != fleetOtherNode {
		t.Fatalf("%s: after the account named %s: root_record %v registration %v", forged.name, fleetOtherNode, after["root_record"], after["registration"])
	}
	removal := play("uninstall.yml")
	if listed := forged.core.admin(t, "nodes"); strings.Contains(listed, rootNode) {
		t.Errorf("%s: its node %s is still listed in Core after the uninstall (the forged identity named %s): %s", forged.name, rootNode, fleetOtherNode, listed)
	}
	for _, n := range nodes {
		if removal.changed[n.name] == 0 {
			t.Errorf("%s: the uninstall changed nothing", n.name)
		}
		if st := status(n); st["condition"] != "ok" || st["uninstalled"] != true {
			t.Errorf("%s: after the uninstall: %v", n.name, st)
		}
		if res, _ := n.host.Exec(ctx, "test", "-e", fleetWorkDir); res.Status == 0 {
			t.Errorf("%s: the role's work directory %s remains", n.name, fleetWorkDir)
		}
		// Once more on the host: the installer's result says unchanged.
		res, err := n.host.Exec(ctx, filepath.Join(bin, "oac-node-install"), "--uninstall", "--json", "--installation-id", n.core.installationID)
		var doc resultDocument
		if err != nil || res.Status != 0 || json.Unmarshal(res.Stdout, &doc) != nil || doc.Result != resultUnchanged || doc.Changed {
			t.Errorf("%s: a second uninstall (exit %d, %v): %s\n%s", n.name, res.Status, err, res.Stdout, res.Stderr)
		}
	}
}

// fleetOtherNode is the node id fleet-1's service account writes into its
// identity.json before the uninstall.
// node is one host of the fleet, with the Core it is a node of.
type node struct {
	name string
	core *devcore
	host *testhost.Host
}

const fleetOtherNode = "0f0e0d0c-0b0a-4908-8706-050403020100"

// nsenterPipelining is community.docker's nsenter connection plugin (as
// installed with Debian's ansible) under the name oac_nsenter, saying it
// pipelines: its exec_command already feeds the module on standard input.
func nsenterPipelining(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("/usr/bin/python3", "-c", "import ansible, os; print(os.path.join(os.path.dirname(os.path.dirname(ansible.__file__)), 'ansible_collections/community/docker/plugins/connection/nsenter.py'))").Output()
	if err != nil {
		t.Fatalf("fleet: community.docker's nsenter connection plugin: %v", err)
	}
	src, err := os.ReadFile(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for _, r := range [][2]string{{"\nname: nsenter\n", "\nname: oac_nsenter\n"}, {"transport = 'community.docker.nsenter'", "transport = 'oac_nsenter'"},
		{"has_pipelining = False", "has_pipelining = True"}} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("fleet: the nsenter plugin %s lacks %q", strings.TrimSpace(string(out)), r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	return s
}

// scanSecrets fails when an enrollment token (oac_et_…) or a Core key is
// in a file of the hosts' or the controller's temporary directories after
// a play: Ansible's AnsiballZ payloads and its local temp files included.
func scanSecrets(t *testing.T, play string, nodes []node, work string) {
	t.Helper()
	needles := []string{"oac_et_"}
	for _, n := range nodes {
		key, err := os.ReadFile(filepath.Join(n.core.data, "admin-key"))
		if err != nil {
			t.Fatal(err)
		}
		needles = append(needles, strings.TrimSpace(string(key)))
	}
	// Ansible's temporary directories: on each host its remote temp
	// (/run/ansible-tmp), root's ~/.ansible and what it made in /tmp and
	// /var/tmp; on the controller the test's Ansible home and local temp,
	// and the remote temp its delegated tasks use on localhost. Of /tmp
	// and /var/tmp only Ansible's own entries: the test hosts share the
	// machine's, where other tests keep their own token files.
	var dirs []string
	ansibleIn := func(root, dir string) {
		ents, _ := os.ReadDir(filepath.Join(root, dir))
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "ansible") || strings.HasPrefix(e.Name(), ".ansible") {
				dirs = append(dirs, filepath.Join(root, dir, e.Name()))
			}
		}
	}
	for _, n := range nodes {
		root := fmt.Sprintf("/proc/%d/root", n.host.PID())
		dirs = append(dirs, filepath.Join(root, "/run/ansible-tmp"), filepath.Join(root, "/root/.ansible"))
		ansibleIn(root, "/tmp")
		ansibleIn(root, "/var/tmp")
	}
	dirs = append(dirs, filepath.Join(work, "ansible"), filepath.Join(work, "tmp"), "/run/ansible-tmp", "/root/.ansible")
	ansibleIn("/", os.TempDir())
	files := 0
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() {
				return nil
			}
			if p == filepath.Join(work, "inventory.yml") {
				return nil
			}
			if info, err := e.Info(); err != nil || info.Size() > 8<<20 {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			files++
			for _, s := range needles {
				if bytes.Contains(data, []byte(s)) {
					t.Errorf("after %s: %s holds a secret (%.10s…)", play, p, s)
				}
			}
			return nil
		})
	}
	t.Logf("secret scan after %s: %d files in %d temporary directories, none holds a token or a Core key", play, files, len(dirs))
}
