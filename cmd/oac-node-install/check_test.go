package main

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile/safefiletest"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
)

const checkID = "0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c"

var checkArgs = []string{"check", "--source-url", "https://console.example.com", "--core-url", "https://core.example.com",
	"--installation-id", checkID}

// checkHost lays out a good Docker host under root: systemd running, a
// docker group (gid 4242), the engine's socket 0660 root:docker served by a
// fake engine, and, when known, the node recorded (host record, bbolt
// bookkeeping with the account, the oac-node account in the docker group).
func checkHost(t *testing.T, root string, known bool) *dockertest.Engine {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the test socket its group")
	}
	for _, d := range []string{"run/systemd/system", "etc/oac-node", "var/run", "var/lib"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	passwd := "root:x:0:0::/root:/bin/sh\n"
	group := "root:x:0:\ndocker:x:4242:\nkvm:x:4343:\n"
	if known {
		passwd += "oac-node:x:990:990::/var/lib/oac-node:/usr/sbin/nologin\n"
		group = "root:x:0:\ndocker:x:4242:oac-node\nkvm:x:4343:\noac-node:x:990:\n"
		h := layout.Host{Root: root}
		rec := `{"format":1,"installation_id":"` + checkID + `","provider":"docker","core_url":"https://core.example.com","node_root":"` +
			h.NodeRoot(checkID) + `","unit":"` + h.Unit(checkID) + `"}`
		os.WriteFile(filepath.Join(root, "etc/oac-node", checkID+".json"), []byte(rec), 0o644)
		db, err := bookkeeping.Open(filepath.Join(root, "etc/oac-node/installer.db"))
		if err != nil {
			t.Fatal(err)
		}
		if err := db.PutAccount(bookkeeping.Account{Name: "oac-node", UID: 990}); err != nil {
			t.Fatal(err)
		}
		// The bookkeeping's entry, which the host record must agree with.
		if err := db.PutInstallation(bookkeeping.Installation{ID: checkID, Provider: "docker", CoreURL: "https://core.example.com",
			NodeRoot: h.NodeRoot(checkID), Unit: h.Unit(checkID), EnvFile: h.EnvFile(checkID)}); err != nil {
			t.Fatal(err)
		}
		db.Close()
		os.Mkdir(filepath.Join(root, "var/lib/oac-node"), 0o700)
		os.Chown(filepath.Join(root, "var/lib/oac-node"), 990, 990)
	}
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte(passwd), 0o644)
	os.WriteFile(filepath.Join(root, "etc/group"), []byte(group), 0o644)
	sock := filepath.Join(root, "var/run/docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	e := dockertest.New()
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	os.Chown(sock, 0, 4242)
	os.Chmod(sock, 0o660)
	return e
}

// hostSnapshot records every file under a root with its mode, owner,
// mtime and content's sha256: a single changed byte shows, bbolt's
// included.
var hostSnapshot = treetest.Options{Owner: true, MTime: true}

// unreadable is a standard input that fails the test when read.
type unreadable struct{ t *testing.T }

func (u unreadable) Read([]byte) (int, error) {
	u.t.Error("check read standard input")
	return 0, os.ErrClosed
}

func runCheck(t *testing.T, root string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := &cli{stdin: unreadable{t}, stdout: &out, stderr: &errOut, hostRoot: root}
	code := c.run(append(append([]string{}, checkArgs...), args...))
	return code, out.String(), errOut.String()
}

func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(out, "\n"+l+"\n") {
			t.Errorf("output lacks the line %q:\n%s", l, out)
		}
	}
}

// A recorded node on a good host: every check passes or says why it is
// skipped, the provider is the recorded one, exit 0, and the host (its
// bbolt bookkeeping included) is byte for byte as before.
func TestCheckKnownNodeChangesNothing(t *testing.T) {
	root := t.TempDir()
	checkHost(t, root, true)
	before := treetest.Snapshot(t, root, hostSnapshot)
	code, out, errOut := runCheck(t, root)
	if d := treetest.Diff(before, treetest.Snapshot(t, root, hostSnapshot)); d != "" {
		t.Fatalf("check changed the host:\n%s", d)
	}
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	wantLines(t, out,
		"ok      running as root",
		"ok      host record",
		"skipped Core's deployment specification: install reads it as the node account with the node's credential; check contacts no one",
		"ok      Docker socket",
		"ok      Docker CPU and memory limits",
		"skipped capacity for one sandbox: the sandbox size is in Core's deployment specification (this host has 4 CPUs and 8192 MiB of memory)",
		"ok      service account oac-node",
	)
	if strings.Contains(out, "FAIL") || strings.Contains(out, "KVM") || strings.Contains(out, "\x1b") {
		t.Fatalf("output:\n%s", out)
	}
}

// Every failure is shown with its hint on one line, not only the first;
// exit 1, nothing changed.
func TestCheckReportsEveryFailure(t *testing.T) {
	root := t.TempDir()
	e := checkHost(t, root, false)
	os.MkdirAll(filepath.Join(root, "sys/fs/selinux"), 0o755)
	os.WriteFile(filepath.Join(root, "sys/fs/selinux/enforce"), []byte("1\n"), 0o644)
	e.AddNetwork(dockertest.Network{Name: "oac-node-" + checkID})
	e.SetInfo(dockertest.Info{NCPU: 4, MemTotal: 8 << 30, MemoryLimit: false, CPUCfsQuota: true})
	os.Mkdir(filepath.Join(root, "var/lib/oac-node"), 0o755) // an orphan home
	before := treetest.Snapshot(t, root, hostSnapshot)
	code, out, errOut := runCheck(t, root, "--provider", "docker")
	if d := treetest.Diff(before, treetest.Snapshot(t, root, hostSnapshot)); d != "" {
		t.Fatalf("check changed the host:\n%s", d)
	}
	if code != exitFailure || !strings.HasPrefix(errOut, "check: 4 of ") {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	wantLines(t, out,
		"skipped host record: this host has no record of the installation: a new node",
		"FAIL    SELinux not enforcing: SELinux is enforcing. Nodes are not supported with SELinux enforcing.",
		"FAIL    Docker CPU and memory limits: the Docker Engine cannot limit containers' CPU and memory. Enable the cgroup v2 controllers (cpu, memory) for Docker.",
		"FAIL    no Docker network of this installation: the Docker network oac-node-"+checkID+" exists: another node of this installation uses this engine. Remove that node first.",
	)
	if !strings.Contains(out, "\nFAIL    service account oac-node: ") || !strings.Contains(out, "there is no account oac-node") {
		t.Errorf("no account refusal:\n%s", out)
	}
	if strings.Contains(out, "Nothing was changed") {
		t.Errorf("check says a refusal changed nothing: it never changes anything\n%s", out)
	}
}

// With --enrollment-token-stdin, check reads the token from standard
// input and reads Core's configuration with it (over TLS, with --core-ca):
// Core's answer is a check's result, never a failure of check itself, and
// the token is sent only to Core, never printed. --json prints the same
// results as one document.
func TestCheckReadsTheTokenFromStdin(t *testing.T) {
	const token = "tok-check-0123456789"
	var auth string
	core := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/sandbox-node/configuration" {
			auth = r.Header.Get("Authorization")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"code":"invalid_node_credential","message":"expired"}}`))
	}))
	defer core.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: core.Certificate().Raw}), 0o644)
	root := t.TempDir()
	checkHost(t, root, false)
	run := func(extra ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		c := &cli{stdin: strings.NewReader(token + "\n"), stdout: &out, stderr: &errOut, hostRoot: root}
		code := c.run(append([]string{"check", "--source-url", core.URL, "--core-url", core.URL, "--installation-id", checkID,
			"--core-ca", ca, "--enrollment-token-stdin"}, extra...))
		return code, out.String(), errOut.String()
	}
	code, out, errOut := run()
	if auth != "Bearer "+token {
		t.Errorf("Core got Authorization %q", auth)
	}
	if code != exitFailure || !strings.Contains(out, "\nFAIL    Core's deployment specification: ") || !strings.Contains(out, "401") {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	if strings.Contains(out+errOut, token) {
		t.Errorf("the token was printed:\n%s\n%s", out, errOut)
	}

	code, out, errOut = run("--json")
	t.Logf("json stderr %q", errOut)
	var doc checkDocument
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	found := false
	for _, ch := range doc.Checks {
		if strings.HasPrefix(ch.Name, "Core's deployment specification") {
			found = ch.Result == "fail" && strings.Contains(ch.Detail, "401")
		}
	}
	if code != exitFailure || doc.Format != 1 || doc.InstallationID != checkID || !found || doc.Failed == 0 ||
		doc.OK+doc.Failed+doc.Skipped+doc.Warnings != len(doc.Checks) || strings.Contains(out, token) {
		t.Errorf("--json: exit %d, %+v", code, doc)
	}
}

// check takes the install flags it needs, no others.
func TestCheckRefusesOtherFlags(t *testing.T) {
	code, _, errOut := runCheck(t, t.TempDir(), "--uninstall")
	if code != exitFailure || !strings.Contains(errOut, "unknown flag: --uninstall") {
		t.Fatalf("--uninstall: exit %d, stderr %q", code, errOut)
	}
}

// Without --provider, Core's deployment or a record, both providers are
// checked, and the one that fails does not fail check when the other
// passes: its failures are shown as skipped, saying what fails. An account
// that does not exist yet is one install creates.
func TestCheckPassesWhenOneProviderPasses(t *testing.T) {
	root := t.TempDir()
	checkHost(t, root, false)
	code, out, errOut := runCheck(t, root)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "\nskipped microsandbox: KVM: fails, and matters only if Core's deployment uses microsandbox (docker's checks pass): ") {
		t.Errorf("microsandbox's failure is not shown as skipped:\n%s", out)
	}
}

const envCheckRoot = "OAC_TEST_CHECK_ROOT"

// Without root, check skips what needs root and says so; what it can read
// it checks. The run is as user nobody, against a host root every user may
// read.
func TestCheckWithoutRoot(t *testing.T) {
	root := safefiletest.SharedDir(t)
	checkHost(t, root, true)
	before := treetest.Snapshot(t, root, hostSnapshot)
	out, err := safefiletest.RunAsNobody(t, "TestCheckWithoutRootChild", envCheckRoot+"="+root)
	if err != nil || !bytes.Contains(out, []byte("checked as uid 65534\n")) {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	if d := treetest.Diff(before, treetest.Snapshot(t, root, hostSnapshot)); d != "" {
		t.Fatalf("check changed the host:\n%s", d)
	}
}

func TestCheckWithoutRootChild(t *testing.T) {
	root := os.Getenv(envCheckRoot)
	if root == "" {
		t.Skip("runs only as the unprivileged process of TestCheckWithoutRoot")
	}
	code, out, errOut := runCheck(t, root)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	wantLines(t, out,
		"skipped running as root: not root: the checks that need root are skipped; install needs root, so run check with sudo to see them all",
		"ok      host record",
		"ok      Docker socket",
		"skipped Docker CPU and memory limits: needs root to ask the Docker Engine",
		"skipped service account oac-node: needs root to read "+filepath.Join(root, "etc/oac-node/installer.db"),
	)
	fmt.Printf("checked as uid %d\n", os.Geteuid())
}

// Neither a token in the environment nor proxy credentials are printed:
// the token check names the variable, the proxy check names a bad
// variable, never its value.
func TestCheckPrintsNoSecret(t *testing.T) {
	root := t.TempDir()
	checkHost(t, root, true)
	const token, pass = "tok-secret-4711", "pr0xy-pass"
	t.Setenv("OAC_ENROLLMENT_TOKEN", token)
	t.Setenv("https_proxy", "http://user:"+pass+"@proxy.example:3128")
	t.Setenv("http_proxy", "ftp://user:"+pass+"@proxy.example:21")
	code, out, errOut := runCheck(t, root)
	if code != exitFailure {
		t.Fatalf("exit %d\n%s", code, out)
	}
	wantLines(t, out,
		"FAIL    no enrollment token in the environment: the environment holds OAC_ENROLLMENT_TOKEN. Unset it; the token is read only from standard input.",
		`FAIL    proxy settings: proxy settings: http_proxy/HTTP_PROXY uses scheme "ftp"; use an http:// proxy URL.`,
	)
	if all := out + errOut; strings.Contains(all, token) || strings.Contains(all, pass) {
		t.Fatalf("a secret was printed:\n%s\n%s", out, errOut)
	}
}

// Without python3 on the PATH systemd gives services, check passes with a
// warning on the python3 line (the platform's node program needs it for
// later generations): exit 0, in the lines and in --json. With an
// executable python3 there, the line is ok.
func TestCheckWarnsWithoutPython(t *testing.T) {
	root := t.TempDir()
	checkHost(t, root, true)
	code, out, errOut := runCheck(t, root)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	wantLines(t, out, "warning python3 for the node program: no python3 on the PATH systemd gives services "+
		"(/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin): the node program needs it to prepare and collect later "+
		"Runtime generations; install the python3 package")
	if !strings.Contains(out, " 0 failed, ") || !strings.HasSuffix(out, " skipped, 1 with a warning.\n") {
		t.Errorf("summary:\n%s", out)
	}
	code, out, _ = runCheck(t, root, "--json")
	var doc checkDocument
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitOK {
		t.Fatalf("--json: exit %d, %v\n%s", code, err, out)
	}
	last := doc.Checks[len(doc.Checks)-1]
	if last.Name != checkPythonName || last.Result != "warning" || !strings.Contains(last.Detail, "no python3") ||
		doc.Warnings != 1 || doc.Failed != 0 || doc.OK+doc.Failed+doc.Skipped+doc.Warnings != len(doc.Checks) {
		t.Errorf("--json: %+v", doc)
	}

	// A file named python3 that is not executable does not count; one
	// that is does.
	bin := filepath.Join(root, "usr/bin")
	os.MkdirAll(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "python3"), []byte("#!/bin/sh\n"), 0o644)
	if _, out, _ := runCheck(t, root); !strings.Contains(out, "\nwarning python3 for the node program: ") {
		t.Errorf("a python3 that is not executable passed:\n%s", out)
	}
	os.Chmod(filepath.Join(bin, "python3"), 0o755)
	code, out, _ = runCheck(t, root)
	wantLines(t, out, "ok      python3 for the node program")
	if code != exitOK || strings.Contains(out, "warning") {
		t.Errorf("exit %d\n%s", code, out)
	}
}
