//go:build e2e

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
)

// fleetHosts is how many test hosts the fleet test drives: nodes of one
// Core, each host with a Docker Engine of its own.
const fleetHosts = 5

// fleetBatch is the plays' batch size (serial) in the test: two batches,
// four hosts and one (each batch costs Ansible's per-task overhead once
// more).
const fleetBatch = 4

// fleetBroken is the index of the host whose engine is stopped before the
// first install play: the last, alone in the last batch, which fails
// (above install.yml's max_fail_percentage: the rollout would stop there,
// and a batch's other hosts with it) after the batch before it converged.
const fleetBroken = fleetHosts - 1

// fleetWorkDir is the role's work directory in the test hosts: under their
// private /var/lib, so that nothing of the role reaches the machine.
const fleetWorkDir = "/var/lib/oac-fleet-role"

// fleetUser is the non-root ansible_user the plays connect as in each
// test host (made in its private /etc, with a home in its private
// /var/lib), becoming root with sudo.
const (
	fleetUser     = "oac-fleet-deploy"
	fleetUserHome = "/var/lib/oac-fleet-deploy"
)

// recapLine is one host's line of Ansible's PLAY RECAP.
var recapLine = regexp.MustCompile(`(?m)^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)`)

// recap is a play's counts per host.
type recap struct {
	out     string
	lines   []string
	changed map[string]int
	bad     map[string]int // unreachable + failed
}

func parseRecap(out string) recap {
	r := recap{out: out, changed: map[string]int{}, bad: map[string]int{}}
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

// taskLines are the lines Ansible printed for task (its name as in the
// TASK [role : name] header) up to the next task.
func (r recap) taskLines(task string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(r.out, "\n") {
		if strings.HasPrefix(l, "TASK [") || strings.HasPrefix(l, "PLAY ") {
			in = strings.Contains(l, task)
			continue
		}
		if in {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestEndToEndFleet runs the repository's Ansible role (deploy/ansible)
// as a fleet operator does: five test hosts, each with a Docker Engine of
// its own (testhost.Options.OwnEngine), are nodes of ONE oac-devcore with
// one installation id, reached as a non-root ansible_user that becomes
// root with sudo, rolled out in batches (serial,
// max_fail_percentage). The last host's engine is stopped before the first
// install play: that host fails once with the message of the installer's
// check, which runs before a token is asked for (none is minted for it),
// and the others converge; after its engine is started a rerun converges it, and a
// further run changes nothing anywhere. --check --diff runs on the fresh
// and on the converged fleet and changes nothing. A host's service account
// rewrites its identity.json to name another host's node: the install
// play mints no token for it and its uninstall removes its own node only.
// The uninstall play then removes every node in Core and on its host.
// After every play the hosts' and the controller's temporary directories
// hold no token and no Core key. make e2e-fleet runs it.
func TestEndToEndFleet(t *testing.T) {
	playbook, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Skip("fleet: needs ansible-playbook (apt-get install ansible)")
	}
	if os.Geteuid() != 0 {
		t.Skip("fleet: needs root (private systemd hosts and engines, accounts and units)")
	}
	if _, err := exec.LookPath("sudo"); err != nil {
		t.Skip("fleet: needs sudo (apt-get install sudo): the plays become root with it")
	}
	suiteStart := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bin := buildAll(t)
	dir, _ := filepath.Abs("../../deploy/ansible")
	work := t.TempDir()
	core := startDevcore(t, bin)
	key, err := os.ReadFile(filepath.Join(core.data, "admin-key"))
	if err != nil {
		t.Fatal(err)
	}

	var nodes []node
	var inv strings.Builder
	// nsenter's plugin runs modules with pipelining but does not say so;
	// this one does, so Ansible pipes every module (and the token among its
	// arguments) to the host's python instead of writing it to a file. It
	// also runs them as ansible_user.
	plugins := filepath.Join(work, "connection_plugins")
	if err := os.MkdirAll(plugins, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plugins, "oac_nsenter.py"), []byte(nsenterPipelining(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&inv, "oac_nodes:\n  vars:\n    ansible_connection: oac_nsenter\n    ansible_user: %s\n    ansible_become: true\n"+
		"    ansible_become_method: sudo\n"+
		"    ansible_python_interpreter: /usr/bin/python3\n"+
		"    oac_provider: docker\n    oac_work_dir: %s\n"+
		"    oac_console_url: %s\n    oac_core_url: %s\n    oac_core_ca: %s\n    oac_core_key: %s\n    oac_installation_id: %s\n  hosts:\n",
		fleetUser, fleetWorkDir, core.url, core.url, core.ca, strings.TrimSpace(string(key)), core.installationID)
	bootStart := time.Now()
	for i := range fleetHosts {
		h := testhost.StartWith(t, testhost.Options{InMemory: true, OwnEngine: true})
		n := node{name: fmt.Sprintf("fleet-%d", i+1), core: core, host: h}
		addFleetUser(t, ctx, n)
		n.before = hostState(t, n)
		nodes = append(nodes, n)
		fmt.Fprintf(&inv, "    %s:\n      ansible_nsenter_pid: %d\n", n.name, h.PID())
	}
	var rss int64
	for _, n := range nodes {
		rss += n.host.Engine.RSS()
	}
	t.Logf("fleet: %d hosts, each with its own engine, booted in %s (engines: %d MiB resident in all)",
		fleetHosts, time.Since(bootStart).Round(100*time.Millisecond), rss>>20)
	inventory := filepath.Join(work, "inventory.yml")
	if err := os.WriteFile(inventory, []byte(inv.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	// run runs a playbook and returns its recap; want says which hosts
	// must fail (nil: none).
	run := func(name string, fail map[string]bool, flags ...string) recap {
		t.Helper()
		start := time.Now()
		// serial is templated before any host is chosen: the batch size
		// is an extra variable, not an inventory one.
		cmd := exec.CommandContext(ctx, playbook, append([]string{"-i", inventory, "--forks", strconv.Itoa(fleetHosts), "-e", "oac_batch=" + strconv.Itoa(fleetBatch), name}, flags...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "ANSIBLE_HOME="+filepath.Join(work, "ansible"), "ANSIBLE_LOCAL_TEMP="+filepath.Join(work, "tmp"),
			"ANSIBLE_NOCOLOR=1", "ANSIBLE_RETRY_FILES_ENABLED=0", "ANSIBLE_CONFIG="+filepath.Join(dir, "ansible.cfg"),
			"ANSIBLE_CONNECTION_PLUGINS="+plugins)
		out, err := cmd.CombinedOutput()
		r := parseRecap(string(out))
		t.Logf("%s %s (%s):\n%s", name, strings.Join(flags, " "), time.Since(start).Round(time.Second), strings.Join(r.lines, "\n"))
		if (err != nil) != (len(fail) > 0) || len(r.lines) == 0 {
			t.Fatalf("ansible-playbook %s: %v\n%s", name, err, out)
		}
		for host, bad := range r.bad {
			if (bad != 0) != fail[host] {
				t.Fatalf("ansible-playbook %s: %s: failed or unreachable %d times, want a failure: %v\n%s", name, host, bad, fail[host], out)
			}
		}
		scanSecrets(t, name, nodes, work)
		return r
	}
	play := func(name string, flags ...string) recap {
		t.Helper()
		return run(name, nil, flags...)
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
	coreNodes := func() []string {
		t.Helper()
		var doc struct {
			Nodes []struct {
				ID string `json:"node_id"`
			} `json:"nodes"`
		}
		out := core.admin(t, "nodes")
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("oac-devcore admin nodes: %v\n%s", err, out)
		}
		var ids []string
		for _, n := range doc.Nodes {
			ids = append(ids, n.ID)
		}
		return ids
	}

	// Check mode on a fresh fleet: it says a change would be made and
	// makes none (no work directory, no installation).
	broken := nodes[fleetBroken]
	broken.host.Engine.Stop()
	fresh := play("install.yml", "--check", "--diff")
	for _, n := range nodes {
		if fresh.changed[n.name] == 0 {
			t.Errorf("%s: --check on a fresh host reports no change", n.name)
		}
		if res, _ := n.host.Exec(ctx, "test", "-e", fleetWorkDir); res.Status == 0 {
			t.Errorf("%s: --check made the role's work directory %s", n.name, fleetWorkDir)
		}
	}
	if !strings.Contains(fresh.out, "would download the installer and install the node") {
		t.Errorf("--check on a fresh fleet does not say what it would do:\n%s", fresh.out)
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
	// The rollout with one host's engine stopped: that host fails once
	// with the installer's message, the batch before it converges.
	first := run("install.yml", map[string]bool{broken.name: true})
	for _, n := range nodes {
		if n.name == broken.name {
			continue
		}
		if first.changed[n.name] == 0 {
			t.Errorf("%s: the first run changed nothing", n.name)
		}
		if st := status(n); st["condition"] != "ok" {
			t.Errorf("%s: after the install: %v", n.name, st)
		}
	}
	const engineDown = "Docker is not installed or not running"
	if c, fatal := strings.Count(first.out, engineDown), regexp.MustCompile(`(?m)^fatal: \[`+broken.name+`\]: FAILED!.*`+engineDown+`.*$`).FindString(first.out); c != 1 || fatal == "" {
		t.Errorf("%s (engine stopped): want one failed task with the installer's message %q, got it %d times:\n%s", broken.name, engineDown, c, first.out)
	} else {
		t.Logf("%s, its engine stopped:\n%s", broken.name, fatal)
	}
	// The installer's checks ran before a token was asked for: none was
	// minted for the host the installer refuses.
	if strings.Contains(first.taskLines("Get an enrollment token"), "["+broken.name+" -> localhost]") {
		t.Errorf("%s (engine stopped): a token was asked for:\n%s", broken.name, first.out)
	}
	if c := strings.Count(first.out, "PLAY [Install OAC sandbox nodes]"); c != (fleetHosts+fleetBatch-1)/fleetBatch {
		t.Errorf("the install play ran in %d batches, want %d of %d hosts", c, (fleetHosts+fleetBatch-1)/fleetBatch, fleetBatch)
	}
	broken.host.Engine.Restart()
	rerun := play("install.yml")
	for _, n := range nodes {
		if ch := rerun.changed[n.name]; (ch != 0) != (n.name == broken.name) {
			t.Errorf("%s: the rerun after the engine's start changed %d", n.name, ch)
		}
		if st := status(n); st["condition"] != "ok" {
			t.Errorf("%s: after the rerun: %v", n.name, st)
		}
	}
	if ids := coreNodes(); len(ids) != fleetHosts {
		t.Errorf("Core lists %d nodes after the rollout, want %d: %v", len(ids), fleetHosts, ids)
	}
	further := play("install.yml")
	for _, n := range nodes {
		if further.changed[n.name] != 0 {
			t.Errorf("%s: a further run changed %d", n.name, further.changed[n.name])
		}
	}
	converged := play("install.yml", "--check", "--diff")
	for _, n := range nodes {
		if converged.changed[n.name] != 0 {
			t.Errorf("%s: --check on a converged host reports %d changes", n.name, converged.changed[n.name])
		}
	}
	if !strings.Contains(converged.out, "a rerun converges") {
		t.Errorf("--check on a converged fleet does not say so:\n%s", converged.out)
	}

	// The service account of fleet-1 rewrites its identity.json to name
	// fleet-2's node: the install play mints no token for fleet-1, and its
	// uninstall removes fleet-1's own node in Core (root's record), never
	// fleet-2's.
	forged, victim := nodes[0], nodes[1]
	rootNode := status(forged)["root_record"].(map[string]any)["node_id"].(string)
	victimNode := status(victim)["root_record"].(map[string]any)["node_id"].(string)
	identity := filepath.Join(fmt.Sprintf("/proc/%d/root", forged.host.PID()), layout.Host{}.NodeRoot(ident.InstallationID(core.installationID)), "state/node/identity.json")
	data, err := os.ReadFile(identity)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(identity, []byte(strings.ReplaceAll(string(data), rootNode, victimNode)), 0o600); err != nil {
		t.Fatal(err)
	}
	if after := status(forged); after["root_record"].(map[string]any)["node_id"] != rootNode ||
		after["registration"].(map[string]any)["node_id"] != victimNode {
		t.Fatalf("%s: after the account named %s: root_record %v registration %v", forged.name, victimNode, after["root_record"], after["registration"])
	}
	// The node's credential does not open another node's configuration:
	// the installer fails, and the play mints no token for the host.
	again := run("install.yml", map[string]bool{forged.name: true}, "--limit", forged.name)
	if again.changed[forged.name] != 0 || !strings.Contains(again.taskLines("Get an enrollment token"), "skipping: ["+forged.name+"]") {
		t.Errorf("%s: with the forged identity the install play changed %d or asked for a token:\n%s", forged.name, again.changed[forged.name], again.out)
	}
	t.Logf("%s, its identity.json naming %s's node: %s", forged.name, victim.name, regexp.MustCompile(`(?m)^fatal: .*$`).FindString(again.out))
	if ids := coreNodes(); len(ids) != fleetHosts {
		t.Errorf("Core lists %d nodes after the forged identity's install play, want %d: %v", len(ids), fleetHosts, ids)
	}
	play("uninstall.yml", "--limit", forged.name)
	ids := strings.Join(coreNodes(), " ")
	if strings.Contains(ids, rootNode) {
		t.Errorf("%s: its node %s is still listed in Core after its uninstall (the forged identity named %s): %s", forged.name, rootNode, victimNode, ids)
	}
	if !strings.Contains(ids, victimNode) {
		t.Errorf("%s's uninstall removed %s's node %s in Core (the forged identity named it): %s", forged.name, victim.name, victimNode, ids)
	}

	removal := play("uninstall.yml")
	if ids := coreNodes(); len(ids) != 0 {
		t.Errorf("Core lists nodes after the uninstall play: %v", ids)
	}
	for _, n := range nodes {
		if n.name != forged.name && removal.changed[n.name] == 0 {
			t.Errorf("%s: the uninstall changed nothing", n.name)
		}
		if st := status(n); st["condition"] != "ok" || st["uninstalled"] != true {
			t.Errorf("%s: after the uninstall: %v", n.name, st)
		}
		if res, _ := n.host.Exec(ctx, "test", "-e", fleetWorkDir); res.Status == 0 {
			t.Errorf("%s: the role's work directory %s remains", n.name, fleetWorkDir)
		}
		if after := hostState(t, n); after != n.before {
			t.Errorf("%s: after the uninstall the host is not as before:\nbefore %s\nafter  %s", n.name, n.before, after)
		}
		// Once more on the host: the installer's result says unchanged.
		res, err := n.host.Exec(ctx, filepath.Join(bin, "oac-node-install"), "--uninstall", "--json", "--installation-id", n.core.installationID)
		var doc resultDocument
		if err != nil || res.Status != 0 || json.Unmarshal(res.Stdout, &doc) != nil || doc.Result != resultUnchanged || doc.Changed {
			t.Errorf("%s: a second uninstall (exit %d, %v): %s\n%s", n.name, res.Status, err, res.Stdout, res.Stderr)
		}
	}
	t.Logf("fleet: the suite took %s", time.Since(suiteStart).Round(time.Second))
}

// node is one host of the fleet, with the Core it is a node of.
type node struct {
	name string
	core *devcore
	host *testhost.Host
	// before is the host's state before the plays (hostState).
	before string
}

// addFleetUser makes the plays' ansible_user in n's host: a system account
// (no lastlog or faillog entry: the host shares the machine's /var/log)
// with its home in the host's private /var/lib, allowed sudo without a
// password by a file in the host's private /etc/sudoers.d.
func addFleetUser(t *testing.T, ctx context.Context, n node) {
	t.Helper()
	for _, argv := range [][]string{
		{"useradd", "--system", "--no-log-init", "--create-home", "--home-dir", fleetUserHome, "--shell", "/bin/sh", fleetUser},
		{"sh", "-c", "mkdir -p /etc/sudoers.d && printf '%s ALL=(ALL) NOPASSWD: ALL\\n' " + fleetUser + " >/etc/sudoers.d/oac-fleet && chmod 0440 /etc/sudoers.d/oac-fleet"},
	} {
		res, err := n.host.Exec(ctx, argv...)
		if err != nil || res.Status != 0 {
			t.Fatalf("%s: %v (exit %d, %v): %s", n.name, argv, res.Status, err, res.Stderr)
		}
	}
}

// hostState is what the plays must leave as it was on n's host once the
// uninstall play ran: its account databases, its unit directory, and its
// engine's networks.
func hostState(t *testing.T, n node) string {
	t.Helper()
	var b strings.Builder
	for _, f := range []string{"passwd", "group", "shadow", "gshadow"} {
		data, err := os.ReadFile(filepath.Join(n.host.Etc(), f))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %x; ", f, sha256.Sum256(data))
	}
	units, err := treetest.Read(filepath.Join(n.host.Etc(), "systemd/system"), treetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "units %d; ", len(units))
	out, err := exec.Command("docker", "-H", "unix://"+n.host.Engine.Socket, "network", "ls", "--format", "{{.Name}}").Output()
	if err != nil {
		t.Fatalf("%s: the engine's networks: %v", n.name, err)
	}
	nets := strings.Fields(string(out))
	sort.Strings(nets)
	fmt.Fprintf(&b, "networks %s", strings.Join(nets, ","))
	return b.String()
}

// nsenterPipelining is community.docker's nsenter connection plugin (as
// installed with Debian's ansible) under the name oac_nsenter, saying it
// pipelines (its exec_command already feeds the module on standard input),
// and running commands as ansible_user instead of root, as an ssh
// connection does.
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
		{"has_pipelining = False", "has_pipelining = True"},
		// ansible_user instead of root: the command runs as that user
		// inside the host (setpriv, with its groups and environment), and
		// become makes it root.
		{`self._play_context.remote_user = "root"`, `self._play_context.remote_user = self._play_context.remote_user or "root"`},
		{"            \"--\",\n        ]\n", "            \"--\",\n        ]\n        user = self._play_context.remote_user\n" +
			"        if user and user != \"root\":\n" +
			"            nsenter_cmd_parts += [\"setpriv\", \"--reuid=\" + user, \"--regid=\" + user, \"--init-groups\", \"--reset-env\"]\n"}} {
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
	key, err := os.ReadFile(filepath.Join(nodes[0].core.data, "admin-key"))
	if err != nil {
		t.Fatal(err)
	}
	needles := []string{"oac_et_", strings.TrimSpace(string(key))}
	// Ansible's temporary directories: on each host its remote temp
	// (in the ansible_user's home), root's ~/.ansible and what it made in /tmp and
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
		dirs = append(dirs, filepath.Join(root, fleetUserHome), filepath.Join(root, "/root/.ansible"))
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
