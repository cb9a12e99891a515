//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
)

// The end-to-end test: the real binary as root, under a real systemd as
// PID 1 of a private namespace with private /etc, /var/lib and /run and the
// machine's Docker Engine, against oac-devcore over TLS. It runs with
// `make e2e` (-tags e2e).

type devcore struct {
	url, ca, data, bin, installationID string
	cmd                                *exec.Cmd
}

// buildAll builds the installer, oac-devcore and oac-node-dev as make build
// does (stripped: the size of the shipped installer is the size of every
// child's executable and of the retained helper), with the test-only
// --host-root flag.
func buildAll(t testing.TB) string {
	t.Helper()
	bin := t.TempDir()
	root, _ := filepath.Abs("../..")
	cmd := exec.Command("go", "build", "-tags", "testhost", "-trimpath", "-ldflags", "-s -w", "-o", bin+"/",
		"./cmd/oac-node-install", "./cmd/oac-devcore", "./cmd/oac-node-dev")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

func startDevcore(t testing.TB, bin string, flags ...string) *devcore {
	t.Helper()
	data := t.TempDir()
	cmd := exec.Command(filepath.Join(bin, "oac-devcore"), append([]string{"--data", data, "--listen", "127.0.0.1:0"}, flags...)...)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	urlLine, idLine := make(chan string, 1), make(chan string, 1)
	var logMu sync.Mutex
	var log strings.Builder
	scan := func(r io.Reader, re *regexp.Regexp, ch chan string) {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case ch <- sc.Text():
				default:
				}
			}
		}
	}
	urlRe := regexp.MustCompile(`serving (https://\S+) \(CA (\S+)\)`)
	idRe := regexp.MustCompile(`installation ([0-9a-f-]{36})`)
	go scan(stdout, urlRe, urlLine)
	go scan(stderr, idRe, idLine)
	d := &devcore{data: data, bin: bin, cmd: cmd}
	for _, ch := range []chan string{urlLine, idLine} {
		select {
		case l := <-ch:
			if m := urlRe.FindStringSubmatch(l); m != nil {
				d.url, d.ca = m[1], m[2]
			} else {
				d.installationID = idRe.FindStringSubmatch(l)[1]
			}
		case <-time.After(2 * time.Minute):
			logMu.Lock()
			defer logMu.Unlock()
			t.Fatalf("oac-devcore did not start:\n%s", log.String())
		}
	}
	return d
}

func (d *devcore) admin(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(d.bin, "oac-devcore"), append([]string{"admin", "--data", d.data}, args...)...).Output()
	if err != nil {
		t.Fatalf("oac-devcore admin %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func sha256File(t testing.TB, p string) string {
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// bootstrap is the command Web would generate for a new token.
func (d *devcore) bootstrap(t testing.TB, token string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(d.bin, "oac-node-install"), "command", "--console", d.url, "--core-url", d.url,
		"--installation-id", d.installationID, "--provider", "docker", "--sha256", sha256File(t, filepath.Join(d.bin, "oac-node-install")),
		"--core-ca", d.ca, "--token-stdin")
	cmd.Stdin = strings.NewReader(token + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("command: %v", err)
	}
	return string(out)
}

// endToEnd is the setup of an end-to-end test: root and the machine's
// Docker Engine (or it skips, saying which it lacks), the binaries built,
// oac-devcore started with devcoreFlags, a test host booted, and the
// engine rid of what the installation left when the test ends.
func endToEnd(t testing.TB, devcoreFlags ...string) (bin string, core *devcore, h *testhost.Host) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("end-to-end: needs root (a private systemd, accounts and units)")
	}
	if _, err := os.Stat("/var/run/docker.sock"); err != nil {
		t.Skip("end-to-end: needs the machine's Docker Engine")
	}
	bin = buildAll(t)
	core = startDevcore(t, bin, devcoreFlags...)
	h = testhost.Start(t)
	t.Cleanup(func() { cleanupEngine(t, core.installationID) })
	return bin, core, h
}

func TestEndToEndInstall(t *testing.T) {
	bin, core, h := endToEnd(t)
	lifecycle(t, bin, core, h, true)
}

// lifecycle is what an operator does with a node, on the test host h: the
// generated bootstrap command piped to bash with the token on its input,
// a rerun, status (and --json), leases, check, an uninstall refused while
// Core lists the node, the uninstall after its removal in Core, and a
// second uninstall; no unit left needing a daemon-reload after the
// install, the rerun and the uninstall, and no login record left.
// bus says whether the host has a system bus; without one, check names
// systemd's private socket.
func lifecycle(t *testing.T, bin string, core *devcore, h *testhost.Host, bus bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	token := core.admin(t, "token")
	script := core.bootstrap(t, token)
	if strings.Contains(script, "--enrollment-token ") {
		t.Fatal("the generated command passes the token as an argument")
	}
	home := t.TempDir() // the operator's HOME: the bootstrap cache lives there
	runStdin := func(script string) testhost.Result {
		t.Helper()
		cmd := h.Command(ctx, "env", "HOME="+home, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "bash")
		cmd.Stdin = strings.NewReader(script)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		res := testhost.Result{}
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatalf("exec: %v", err)
			}
			res.Status = ee.ExitCode()
		}
		res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
		return res
	}
	run := func(script string) testhost.Result {
		t.Helper()
		res, err := h.Exec(ctx, "env", "HOME="+home, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "bash", "-c", script)
		if err != nil {
			t.Fatalf("exec: %v", err)
		}
		return res
	}
	// No unit may be left needing a daemon-reload (systemd >= 257 flags
	// every unit after an enable until the next reload): after the
	// install, the rerun and the uninstall.
	noReloadPending := func(when string) {
		t.Helper()
		unit := "oac-node-" + core.installationID + ".service"
		res := run("systemctl show -p Id -p NeedDaemonReload '*' " + unit)
		out := string(res.Stdout)
		if res.Status != 0 || !strings.Contains(out, "Id="+unit+"\nNeedDaemonReload=no\n") || strings.Count(out, "NeedDaemonReload=no") < 2 {
			t.Errorf("after %s, systemctl show (exit %d) does not show the units' NeedDaemonReload:\n%s%s", when, res.Status, out, res.Stderr)
		}
		if strings.Contains(out, "NeedDaemonReload=yes") {
			t.Errorf("after %s units need a daemon-reload:\n%s", when, out)
		}
	}
	// The login records an account's creation may write (useradd without
	// --no-log-init), compared after the uninstall.
	logRecords := "stat -c '%n %s' /var/log/lastlog /var/log/faillog 2>&1"
	logsBefore := run(logRecords)
	// As an operator pastes it: the shell reads the command from its
	// input, so the token is in no process's arguments.
	stop := scanProcs(t, token)
	res := runStdin(script)
	if found := stop(); len(found) > 0 {
		t.Errorf("the token was in a process's arguments or environment: %v", found)
	}
	if found := grepTree(t, token, h.Etc(), h.VarLib(), home); len(found) > 0 {
		t.Errorf("the token is in files after the installation: %v", found)
	}
	t.Logf("install:\n%s\n%s", res.Stdout, res.Stderr)
	if res.Status != 0 {
		t.Fatalf("the generated command exited %d", res.Status)
	}
	for _, want := range []string{"Node installation complete.", "Core connection: connected", "Sandbox Provider: Docker (ready)"} {
		if !strings.Contains(string(res.Stdout), want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if strings.Contains(string(res.Stdout)+string(res.Stderr), token) {
		t.Error("the token was printed")
	}
	noReloadPending("the install")
	// The run's record: its output in the journal under the installer's
	// identifier, and kept in root's journal directory; neither holds the
	// token.
	if run("test -S /run/systemd/journal/socket").Status != 0 {
		t.Log("journald does not run in this test host (only a rootfs host runs it: make e2e-distros reads the journal's record)")
	} else {
		res = run("journalctl --sync; journalctl -t oac-node-install -o short-iso --no-pager")
		t.Logf("journalctl -t oac-node-install (exit %d):\n%s%s", res.Status, res.Stdout, res.Stderr)
		for _, want := range []string{"==> ", "Node installation complete.", "Core connection: connected"} {
			if !strings.Contains(string(res.Stdout), want) {
				t.Errorf("the journal's record of the install lacks %q", want)
			}
		}
		if strings.Contains(string(res.Stdout), token) || strings.ContainsRune(string(res.Stdout), 0x1b) {
			t.Error("the journal's record holds the token or terminal controls")
		}
	}
	res = run("cat /var/lib/oac-node-install/runs/*-install-" + core.installationID + ".log")
	if res.Status != 0 || !strings.Contains(string(res.Stdout), "Node installation complete.") {
		t.Errorf("the install's output is not kept in /var/lib/oac-node-install/runs (exit %d):\n%s%s", res.Status, res.Stdout, res.Stderr)
	}

	// A rerun of the registered node: no token, nothing changes.
	rerun := fmt.Sprintf("%s --source-url %s --core-url %s --provider docker --installation-id %s --core-ca %s",
		filepath.Join(home, ".oac/node-bootstrap", sha256File(t, filepath.Join(bin, "oac-node-install"))), core.url, core.url, core.installationID, core.ca)
	// Root's records and journals keep every entry's inode, size and times.
	// (The run's own record, in runs/, is the one file a rerun adds.)
	rootState := "find /etc/oac-node /var/lib/oac-node-install /etc/systemd/system -path /var/lib/oac-node-install/runs -prune -o -printf '%p %i %m %s %T@ %C@\\n' | sort"
	before := run(rootState)
	res = run(rerun)
	t.Logf("rerun:\n%s\n%s", res.Stdout, res.Stderr)
	if res.Status != 0 {
		t.Fatalf("the rerun exited %d", res.Status)
	}
	if !strings.Contains(string(res.Stdout), "No change: the node is installed, registered and running.") || strings.Contains(string(res.Stdout), "Node installation complete.") {
		t.Errorf("the converged rerun does not say that nothing changed:\n%s", res.Stdout)
	}
	if after := run(rootState); string(after.Stdout) != string(before.Stdout) || len(before.Stdout) == 0 {
		t.Errorf("the rerun of a healthy node changed root's records or journals:\nbefore:\n%s\nafter:\n%s", before.Stdout, after.Stdout)
	}
	noReloadPending("the rerun")
	// Root remembers what the installation was given: the rerun needs
	// only the installation id, or nothing on a host with one node; a
	// flag that differs from the record is refused, naming it.
	for _, short := range []string{"/usr/local/sbin/oac-node-install --installation-id " + core.installationID, "/usr/local/sbin/oac-node-install"} {
		res = run(short)
		t.Logf("%s (exit %d):\n%s\n%s", short, res.Status, res.Stdout, res.Stderr)
		if res.Status != 0 || !strings.Contains(string(res.Stdout), "No change: the node is installed, registered and running.") {
			t.Errorf("%s: exit %d", short, res.Status)
		}
	}
	differ := "/usr/local/sbin/oac-node-install --installation-id " + core.installationID + " --source-url https://other.example.com"
	res = run(differ)
	t.Logf("%s (exit %d):\n%s\n%s", differ, res.Status, res.Stdout, res.Stderr)
	if res.Status == 0 || !strings.Contains(string(res.Stderr), "was installed with --source-url "+core.url+", but this command says --source-url https://other.example.com") {
		t.Errorf("a different --source-url: exit %d", res.Status)
	}
	if after := run(rootState); string(after.Stdout) != string(before.Stdout) {
		t.Errorf("the short reruns changed root's records or journals:\nbefore:\n%s\nafter:\n%s", before.Stdout, after.Stdout)
	}
	res = run(filepath.Join(bin, "oac-node-install") + " status")
	t.Logf("status (exit %d):\n%s\n%s", res.Status, res.Stdout, res.Stderr)
	if res.Status != 0 {
		t.Errorf("status exited %d after a healthy installation", res.Status)
	}
	for _, want := range []string{"  unit:          oac-node-" + core.installationID + ".service: active (running)",
		"  registration:  registered, node ", "  core:          " + core.url + ": connected, provider ready",
		"    network:     oac-node-" + core.installationID, "    image:       sha256:",
		"    node root:   /var/lib/oac-node/.oac/nodes/" + core.installationID,
		"\ncommand on this host: /usr/local/sbin/oac-node-install (oac-node-install ",
		"\nEvery install and uninstall run's output: journalctl -t oac-node-install, and the last 10 runs in /var/lib/oac-node-install/runs."} {
		if !strings.Contains(string(res.Stdout), want) {
			t.Errorf("status lacks %q", want)
		}
	}
	res = run(filepath.Join(bin, "oac-node-install") + " status --json")
	var doc map[string]any
	if err := json.Unmarshal(res.Stdout, &doc); res.Status != 0 || err != nil {
		t.Errorf("status --json exited %d or printed no JSON document (%v):\n%s\n%s", res.Status, err, res.Stdout, res.Stderr)
	}
	res = run(filepath.Join(bin, "oac-node-install") + " leases")
	t.Logf("leases (exit %d):\n%s\n%s", res.Status, res.Stdout, res.Stderr)
	if res.Status != 0 {
		t.Errorf("leases exited %d on a healthy node", res.Status)
	}
	t.Logf("Core's nodes: %s", core.admin(t, "nodes"))
	// check on the installed node: every check passes, nothing changes.
	etc := treetest.Snapshot(t, h.Etc(), hostSnapshot)
	res = run(filepath.Join(bin, "oac-node-install") + " check " + strings.SplitN(rerun, " ", 2)[1])
	t.Logf("check (exit %d):\n%s\n%s", res.Status, res.Stdout, res.Stderr)
	if d := treetest.Diff(etc, treetest.Snapshot(t, h.Etc(), hostSnapshot)); res.Status != 0 || d != "" {
		t.Errorf("check on the installed node exited %d or changed /etc:\n%s", res.Status, d)
	}
	// check names how it reached systemd and the version it checked.
	reached := `on the system bus`
	if !bus {
		reached = `on its private socket /run/systemd/private \(no system bus\)`
	}
	if !regexp.MustCompile(`(?m)^\s*ok\s+systemd \S+ ` + reached + `$`).Match(res.Stdout) {
		t.Errorf("check does not name systemd's version and how it reached it (%s):\n%s", reached, res.Stdout)
	}

	// Uninstall refuses while Core still lists the node, changing nothing.
	uninstall := filepath.Join(bin, "oac-node-install") + " --uninstall --installation-id " + core.installationID
	res = run(uninstall)
	t.Logf("uninstall while listed (exit %d):\n%s\n%s", res.Status, res.Stdout, res.Stderr)
	if res.Status == 0 || !strings.Contains(string(res.Stderr), "Uninstall failed: Core still lists this node") || strings.Contains(string(res.Stderr), "(as oac-node)") {
		t.Errorf("uninstall while Core lists the node: exit %d", res.Status)
	}
	// Removed in Core (the Nodes page), the node uninstalls.
	var listed struct {
		Nodes []struct {
			NodeID string `json:"node_id"`
		} `json:"nodes"`
	}
	json.Unmarshal([]byte(core.admin(t, "nodes")), &listed)
	if len(listed.Nodes) != 1 {
		t.Fatalf("Core lists %d nodes", len(listed.Nodes))
	}
	core.admin(t, "remove-node", listed.Nodes[0].NodeID)
	// The uninstall command does what --uninstall does.
	res = run(filepath.Join(bin, "oac-node-install") + " uninstall --installation-id " + core.installationID)
	t.Logf("uninstall (exit %d):\n%s\n%s", res.Status, res.Stdout, res.Stderr)
	if res.Status != 0 {
		t.Fatalf("uninstall exited %d", res.Status)
	}
	if !strings.Contains(string(res.Stdout), "Removed the command /usr/local/sbin/oac-node-install: no node remains on this host.") {
		t.Errorf("the uninstall of the last node does not say that the command on PATH was removed")
	}
	// A second uninstall finds nothing left to do.
	res = run(filepath.Join(bin, "oac-node-install") + " uninstall --installation-id " + core.installationID)
	t.Logf("second uninstall (exit %d):\n%s\n%s", res.Status, res.Stdout, res.Stderr)
	if res.Status != 0 {
		t.Errorf("a second uninstall exited %d", res.Status)
	}
	res = run("id oac-node; ls /etc/oac-node /var/lib/oac-node /etc/systemd/system/" + "oac-node-" + core.installationID + ".service")
	if res.Status == 0 {
		t.Errorf("after uninstall the account, records or unit remain:\n%s", res.Stdout)
	}
	noReloadPending("the uninstall")
	if after := run(logRecords); string(after.Stdout) != string(logsBefore.Stdout) {
		t.Errorf("the account's creation or removal left login records:\nbefore:\n%s\nafter:\n%s", logsBefore.Stdout, after.Stdout)
	}
	res = run(filepath.Join(bin, "oac-node-install") + " status")
	if res.Status != 0 || !strings.Contains(string(res.Stdout), core.installationID+": ok (uninstalled)") {
		t.Errorf("status after the uninstallation (exit %d):\n%s\n%s", res.Status, res.Stdout, res.Stderr)
	}
	// Uninstalled, the installation is still known: status of it answers 0.
	res = run(filepath.Join(bin, "oac-node-install") + " status --installation-id " + core.installationID)
	if res.Status != 0 {
		t.Errorf("status --installation-id of the uninstalled node exited %d:\n%s\n%s", res.Status, res.Stdout, res.Stderr)
	}
}

// cleanupEngine removes what the installation left in the machine's
// engine: its network and its console's fixture images.
func cleanupEngine(t testing.TB, id string) {
	exec.Command("docker", "network", "rm", "oac-node-"+id).Run()
	removeRunImages(t, id)
}

// removeRunImages removes the fixture images this run's console built: those
// whose io.oac.fixture label names its installation id (oac-devcore's
// first release "oac-devcore installation <id>", a later generation's
// "… of installation <id>"). Another run's images have other labels and
// stay. An image is removed without -f: one a container still uses stays
// (and is logged), as the engine decides.
func removeRunImages(t testing.TB, id string) {
	out, _ := exec.Command("docker", "images", "--no-trunc", "--filter", "label=io.oac.fixture", "-q").Output()
	seen := map[string]bool{}
	for _, img := range strings.Fields(string(out)) {
		if seen[img] {
			continue
		}
		seen[img] = true
		label, err := exec.Command("docker", "image", "inspect", "--format", `{{index .Config.Labels "io.oac.fixture"}}`, img).Output()
		if err != nil || !strings.HasSuffix(strings.TrimSpace(string(label)), "installation "+id) {
			continue
		}
		if out, err := exec.Command("docker", "image", "rm", img).CombinedOutput(); err != nil {
			t.Logf("cleanup: the engine keeps image %s (%s): %s", img, strings.TrimSpace(string(label)), bytes.TrimSpace(out))
		}
	}
}

// scanProcs watches every process's argv and environment for secret until
// the returned function is called; it returns where it was seen.
func scanProcs(t *testing.T, secret string) func() []string {
	done := make(chan struct{})
	result := make(chan []string, 1)
	go func() {
		var found []string
		seen := map[string]bool{}
		for {
			pids, _ := filepath.Glob("/proc/[0-9]*")
			for _, p := range pids {
				for _, f := range []string{"cmdline", "environ"} {
					data, err := os.ReadFile(filepath.Join(p, f))
					if err == nil && bytes.Contains(data, []byte(secret)) && !seen[p+f] {
						seen[p+f] = true
						cmd, _ := os.ReadFile(filepath.Join(p, "cmdline"))
						found = append(found, fmt.Sprintf("%s/%s (%q)", p, f, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
					}
				}
			}
			select {
			case <-done:
				result <- found
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() []string { close(done); return <-result }
}

// grepTree lists the regular files below dirs that hold secret.
func grepTree(t *testing.T, secret string, dirs ...string) []string {
	var found []string
	for _, d := range dirs {
		filepath.Walk(d, func(p string, fi os.FileInfo, err error) error {
			if err != nil || !fi.Mode().IsRegular() || fi.Size() > 64<<20 {
				return nil
			}
			if data, err := os.ReadFile(p); err == nil && bytes.Contains(data, []byte(secret)) {
				found = append(found, p)
			}
			return nil
		})
	}
	return found
}
