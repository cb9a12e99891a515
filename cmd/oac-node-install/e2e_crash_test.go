//go:build e2e

package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
	"github.com/openagentcore/oac-node-install/workflow/crashharness"
)

// The crash tests of the real binary in the test host: the installer, built
// with the failpoints (-tags crashtest, which also gives it --host-root; the
// runs here use the test host's real paths), SIGKILLs itself at a journal
// point of root's process; its service-account children die with it (parent
// death signal). The same command is rerun and the host must converge on
// what an uninterrupted run leaves. Each point runs in a fresh test host
// (boot ≈ 1 s) against one oac-devcore whose node is removed after each
// point, so every point sees the same installation id, Core URL and CA.
//
// Sampling (make e2e, in CI): every 7th install point plus every point of
// the lease and register steps, every 4th uninstall point, every 11th
// install point before an uninstall (each k coprime to 3, so that each of a
// record's before-write, before-sync and after-sync points occurs); about 5
// minutes on a loaded 2-core machine. OAC_E2E_CRASH_EVERY=k overrides k,
// OAC_E2E_CRASH_MAX caps the points per test (0: no cap).
// OAC_E2E_CRASH_EVERY=1 runs all (make e2e-crash); OAC_E2E_CRASH_POINTS=3,7
// runs the points named; OAC_E2E_CRASH_PART=k/n runs the k-th of n
// disjoint parts of the points (before the sampling above).

// crashEnv is the environment every installer run gets inside the host.
var crashEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "HOME=/root", "NO_COLOR=1"}

// crashRig is what every point shares: the binaries and the console.
type crashRig struct {
	t    *testing.T
	bin  string
	core *devcore
	tmp  string
	// powerCut runs each host's /etc and /var/lib on the power-cut file
	// system.
	powerCut bool
	// diskFull runs each host's /etc and /var/lib on the disk-full file
	// system.
	diskFull bool
	// runtimeImages are the fixture images after the first installation.
	runtimeImages map[string]bool
	// tally counts the points of the suite running and times their
	// phases.
	tally *crashharness.Tally
}

// timed starts timing one phase of a point; the returned func ends it.
func (r *crashRig) timed(phase string) func() { return r.tally.Timed(phase) }

func newCrashRig(t *testing.T) *crashRig {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("end-to-end crash: needs root (a private systemd, accounts and units)")
	}
	if _, err := os.Stat("/var/run/docker.sock"); err != nil {
		t.Skip("end-to-end crash: needs the machine's Docker Engine")
	}
	bin := t.TempDir()
	root, _ := filepath.Abs("../..")
	for _, b := range []struct{ tags, pkg string }{
		{"crashtest", "./cmd/oac-node-install"}, // failpoints and --host-root
		{"testhost", "./cmd/oac-devcore"},
		{"testhost", "./cmd/oac-node-dev"},
	} {
		cmd := exec.Command("go", "build", "-tags", b.tags, "-trimpath", "-o", bin+"/", b.pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", b.pkg, err, out)
		}
	}
	r := &crashRig{t: t, bin: bin, tmp: t.TempDir(), tally: crashharness.NewTally()}
	os.Chmod(r.tmp, 0o755)
	r.core = startCrashDevcore(t, bin)
	t.Cleanup(func() {
		cleanupEngine(t, r.core.installationID)
	})
	return r
}

// startCrashDevcore starts oac-devcore and reads its installation id from
// its state file (its stderr, which startDevcore reads, may not hold the
// line yet on a loaded machine when the URL is printed on stdout).
func startCrashDevcore(t *testing.T, bin string) *devcore {
	t.Helper()
	data := t.TempDir()
	cmd := exec.Command(filepath.Join(bin, "oac-devcore"), "--data", data, "--listen", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "devcore.log")
	logw, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer logw.Close()
	cmd.Stderr = logw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		log, _ := os.ReadFile(logFile)
		t.Fatalf("oac-devcore did not start: %v\n%s", err, log)
	}
	go io.Copy(io.Discard, stdout)
	m := regexp.MustCompile(`serving (https://\S+) \(CA (\S+)\)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("oac-devcore said %q", line)
	}
	var state struct {
		InstallationID string `json:"installation_id"`
	}
	b, err := os.ReadFile(filepath.Join(data, "core-state.json"))
	if err == nil {
		err = json.Unmarshal(b, &state)
	}
	if err != nil || state.InstallationID == "" {
		t.Fatalf("oac-devcore's installation id: %v", err)
	}
	return &devcore{url: m[1], ca: m[2], data: data, bin: bin, cmd: cmd, installationID: state.InstallationID}
}

// dockerImages lists the fixture images the engine holds.
func dockerImages() map[string]bool {
	out, _ := exec.Command("docker", "images", "--no-trunc", "--filter", "label=io.oac.fixture", "-q").Output()
	m := map[string]bool{}
	for _, f := range strings.Fields(string(out)) {
		m[f] = true
	}
	return m
}

// noteImage records the Runtime image the first installation imported
// (the fixture images in the engine then).
func (r *crashRig) noteImage(t *testing.T) {
	if r.runtimeImages == nil {
		r.runtimeImages = dockerImages()
	}
}

// skipIfImageLost skips the point when the machine's engine no longer
// holds the Runtime image: on a shared machine another test's cleanup
// removes fixture images by label, and the node then reports its provider
// not ready, which says nothing about the crash. (CI runs the tests one
// after another; there this never skips.)
func (r *crashRig) skipIfImageLost(t *testing.T) {
	for img := range r.runtimeImages {
		if exec.Command("docker", "image", "inspect", img).Run() != nil {
			t.Skipf("the machine's Docker Engine lost the Runtime image %s during this point (another test removed it); the point proves nothing", img)
		}
	}
}

// crashHost is one test host under a point.
type crashHost struct {
	*testhost.Host
	r      *crashRig
	tokens []string
	// firstToken is when the first of tokens was issued.
	firstToken time.Time
	// hashed memoizes tree's description of a file by its identity and
	// status (a file whose inode, size, mtime and ctime are unchanged
	// has its bytes unchanged).
	hashed map[fileKey]string
	// before is the host's /etc and /var/lib as booted.
	before hostTree
	// lost counts the paths power cuts lost.
	lost int
}

// boot starts a fresh test host for one point (its teardown and the
// machine's check are t's cleanups).
func (r *crashRig) boot(t *testing.T) *crashHost {
	t.Helper()
	defer r.timed("boot")()
	h := testhost.StartWith(t, testhost.Options{InMemory: true, PowerCut: r.powerCut, DiskFull: r.diskFull})
	ch := &crashHost{Host: h, r: r}
	ch.before = ch.tree(t, "")
	t.Cleanup(func() {
		// The node's network (the same name at every point) and Core's
		// record of the node go, so the next point starts as this one.
		exec.Command("docker", "network", "rm", "oac-node-"+r.core.installationID).Run()
		for _, n := range r.nodes(t) {
			r.core.admin(t, "remove-node", n)
		}
	})
	return ch
}

// nodes lists the node ids Core has enrolled and not removed.
func (r *crashRig) nodes(t *testing.T) []string {
	t.Helper()
	var listed struct {
		Nodes []struct {
			NodeID string `json:"node_id"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(r.core.admin(t, "nodes")), &listed); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range listed.Nodes {
		ids = append(ids, n.NodeID)
	}
	return ids
}

// runResult is one installer run inside the host.
type runResult struct {
	out    string
	status int
	killed bool // by SIGKILL (its own failpoint)
}

func (r runResult) String() string {
	return fmt.Sprintf("exit %d killed %v:\n%s", r.status, r.killed, r.out)
}

// run runs the installer in the host with args and the extra environment;
// a non-empty token is passed on standard input (--enrollment-token-stdin).
func (h *crashHost) run(t *testing.T, env []string, token string, args ...string) runResult {
	t.Helper()
	return h.start(t, "the installer", env, token, args...).wait(t, 5*time.Minute)
}

func (r *crashRig) installArgs() []string {
	return []string{"--source-url", r.core.url, "--core-url", r.core.url, "--provider", "docker",
		"--installation-id", r.core.installationID, "--core-ca", r.core.ca}
}

func (r *crashRig) uninstallArgs(force bool) []string {
	args := []string{"--uninstall", "--installation-id", r.core.installationID}
	if force {
		args = append(args, "--force")
	}
	return args
}

// rerun is the run after the crash, timed as "rerun".
func (h *crashHost) rerun(t *testing.T, run func(t *testing.T, env ...string) runResult) runResult {
	t.Helper()
	defer h.r.timed("rerun")()
	return run(t)
}

// install runs the install command; a node Core has not enrolled gets a
// new token (single use), a registered node none.
func (h *crashHost) install(t *testing.T, env ...string) runResult {
	t.Helper()
	token := ""
	if len(h.r.nodes(t)) == 0 {
		if len(h.tokens) == 0 {
			h.firstToken = time.Now()
		}
		token = h.r.core.admin(t, "token")
		h.tokens = append(h.tokens, token)
	}
	return h.run(t, env, token, h.r.installArgs()...)
}

// uninstall removes the node in Core first (the Nodes page), as the
// refusal asks, then runs the uninstall command.
func (h *crashHost) uninstall(t *testing.T, force bool, env ...string) runResult {
	t.Helper()
	for _, n := range h.r.nodes(t) {
		h.r.core.admin(t, "remove-node", n)
	}
	return h.run(t, env, "", h.r.uninstallArgs(force)...)
}

func (h *crashHost) journalDir() string {
	return filepath.Join(h.VarLib(), "oac-node-install", h.r.core.installationID)
}

// outcome summarises the workflow journal name (install or uninstall):
// its condition, state and completed steps; "absent" when there is none.
func (h *crashHost) outcome(t *testing.T, name string) string {
	t.Helper()
	rep, err := workflow.InspectJournal(filepath.Join(h.journalDir(), name+".journal"), workflow.Lookup)
	if errors.Is(err, os.ErrNotExist) {
		return "absent"
	}
	if err != nil {
		t.Fatalf("inspect the %s journal: %v", name, err)
	}
	var steps []string
	for _, c := range rep.Completed {
		steps = append(steps, c.Step)
	}
	return fmt.Sprintf("%s %s %s", rep.Condition, rep.State, strings.Join(steps, ","))
}

// interrupted is the state whose step a crash left begun and unfinished.
func (h *crashHost) interrupted(t *testing.T, name string) string {
	rep, err := workflow.InspectJournal(filepath.Join(h.journalDir(), name+".journal"), workflow.Lookup)
	if err != nil || rep.Pending == nil {
		return ""
	}
	return string(rep.Pending.State)
}

// records are the bookkeeping records without their times, read from a
// copy of the database (opening it migrates, which would write).
func (h *crashHost) records(t *testing.T) string {
	t.Helper()
	src := filepath.Join(h.Etc(), "oac-node", "installer.db")
	data, err := os.ReadFile(src)
	if errors.Is(err, os.ErrNotExist) {
		return "no database"
	}
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "installer.db")
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bookkeeping.Open(cp)
	if err != nil {
		t.Fatalf("open a copy of the bookkeeping: %v", err)
	}
	defer db.Close()
	id := h.r.core.installationID
	var b strings.Builder
	if a, ok, err := db.Account(); err != nil {
		t.Fatal(err)
	} else if ok {
		a.Recorded = time.Time{}
		fmt.Fprintf(&b, "account %+v\n", a)
	}
	groups, err := db.Groups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		fmt.Fprintf(&b, "group %s\n", g.Name)
	}
	insts, err := db.ListInstallations()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range insts {
		in.Created = time.Time{}
		fmt.Fprintf(&b, "installation %+v\n", in)
	}
	files, err := db.Files(ident.InstallationID(id))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		fmt.Fprintf(&b, "file %s %s\n", f.Path, f.Kind)
	}
	nets, err := db.Networks(ident.InstallationID(id))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nets {
		fmt.Fprintf(&b, "network %s\n", n.Name)
	}
	return b.String()
}

// hostTree is the host's /etc and /var/lib, path to type, mode, owner and
// content hash (or link target).
type hostTree map[string]string

// crashIgnored are the paths whose bytes legitimately differ between an
// interrupted-then-rerun installation and an uninterrupted one, each
// compared another way or explained:
func crashIgnored(rel, id string) bool {
	switch {
	// The workflow journals (and their receipts kept aside) record every
	// attempt with its time: compared through their outcome.
	case strings.HasPrefix(rel, "var-lib/oac-node-install/"+id+"/"):
		return strings.Contains(filepath.Base(rel), ".journal")
	// The record of each run's output: one file per run that ended,
	// named after its start, so an interrupted run and its rerun leave
	// other files than one uninterrupted run.
	case strings.HasPrefix(rel, "var-lib/oac-node-install/runs/"):
		return true
	// The bookkeeping database: bbolt's pages hold the records' times and
	// the free-list of its transactions; compared record by record.
	case rel == "etc/oac-node/installer.db":
		return true
	// shadow-utils' backups of the previous database (passwd-, group-,
	// shadow-, gshadow-, subuid-, subgid-) hold whatever the last call
	// replaced, which depends on which calls a rerun's Verify skipped and,
	// after an uninstall, differs from before the install; the databases
	// themselves are compared.
	case strings.HasPrefix(rel, "etc/") && strings.HasSuffix(rel, "-") && !strings.Contains(rel[4:], "/"):
		return true
	// The empty lock file the first shadow-utils call creates and none
	// removes (lckpwdf): after an uninstall it is there though it was not
	// before the install.
	case rel == "etc/.pwd.lock":
		return true
	}
	return false
}

// nodeIDMark replaces the node id Core's enrollment chose (a random UUID
// the node program makes per enrollment) in names and contents before
// hashing.
const nodeIDMark = "<node-id>"

// perEnrollment are the JSON fields whose values each enrollment or each
// fresh host chooses anew, replaced before hashing: the node's credential
// (a random secret the node program makes before it enrolls, in
// identity.json) and the device and inode numbers a lease's identity
// records (each fresh copy of /var/lib has new inodes).
var perEnrollment = map[string]bool{"credential": true, "device": true, "inode": true}

// normalizeJSON replaces the values of perEnrollment's fields in a JSON
// object file of the node's state; anything else is returned as it is.
func normalizeJSON(rel string, data []byte) []byte {
	if !strings.HasPrefix(rel, "var-lib/oac-node/") || !(strings.HasSuffix(rel, ".json") || strings.HasSuffix(rel, ".lease-identity")) {
		return data
	}
	var v map[string]any
	if json.Unmarshal(data, &v) != nil {
		return data
	}
	var walk func(m map[string]any)
	walk = func(m map[string]any) {
		for k, x := range m {
			if perEnrollment[k] {
				m[k] = "<" + k + ">"
			} else if sub, ok := x.(map[string]any); ok {
				walk(sub)
			}
		}
	}
	walk(v)
	out, _ := json.Marshal(v)
	return append([]byte("normalized "), out...)
}

// optional are paths compared only when both trees have them: the Runtime
// image archive, downloaded only when the machine's engine (shared with
// every other test) does not hold the image yet; when present the
// installer has verified it against the manifest's digest.
func optional(rel string) bool { return strings.HasSuffix(rel, "/images/runtime.tar.gz") }

// fileKey is a file's identity and status for crashHost.hashed.
type fileKey struct {
	rel, nodeID        string
	dev, ino           uint64
	size, mtime, ctime int64
}

// tree snapshots the host's /etc and /var/lib; nodeID, when set, is
// replaced in names and contents by a mark.
func (h *crashHost) tree(t *testing.T, nodeID string) hostTree {
	t.Helper()
	out := hostTree{}
	id := h.r.core.installationID
	etc, varLib := h.Copies()
	if h.hashed == nil {
		h.hashed = map[fileKey]string{}
	}
	for _, top := range []struct{ name, dir string }{{"etc", etc}, {"var-lib", varLib}} {
		err := filepath.WalkDir(top.dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(top.dir, p)
			rel = filepath.Join(top.name, rel)
			if crashIgnored(rel, id) {
				return nil
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return err
			}
			st := fi.Sys().(*syscall.Stat_t)
			desc := fmt.Sprintf("%v %d:%d", fi.Mode(), st.Uid, st.Gid)
			switch {
			case fi.Mode().IsRegular():
				k := fileKey{rel, nodeID, st.Dev, st.Ino, st.Size, st.Mtim.Nano(), st.Ctim.Nano()}
				sum, ok := h.hashed[k]
				if !ok {
					data, err := os.ReadFile(p)
					if err != nil {
						return err
					}
					if nodeID != "" {
						data = bytes.ReplaceAll(data, []byte(nodeID), []byte(nodeIDMark))
					}
					data = normalizeJSON(rel, data)
					s := sha256.Sum256(data)
					sum = fmt.Sprintf(" %d %s", len(data), hex.EncodeToString(s[:8]))
					h.hashed[k] = sum
				}
				desc += sum
			case fi.Mode()&fs.ModeSymlink != 0:
				target, _ := os.Readlink(p)
				desc += " -> " + target
			}
			if nodeID != "" {
				rel = strings.ReplaceAll(rel, nodeID, nodeIDMark)
			}
			out[rel] = desc
			return nil
		})
		if err != nil {
			t.Fatalf("snapshot the test host: %v", err)
		}
	}
	return out
}

// diff lists what differs from want to got (treetest.Diff's lines); skip
// leaves paths out, and an optional path is compared only when both trees
// have it.
func (want hostTree) diff(got hostTree, skip func(string) bool) []string {
	a, b := treetest.Tree{}, treetest.Tree{}
	for p, v := range want {
		if _, ok := got[p]; (ok || !optional(p)) && (skip == nil || !skip(p)) {
			a[p] = v
		}
	}
	for p, v := range got {
		if _, ok := want[p]; (ok || !optional(p)) && (skip == nil || !skip(p)) {
			b[p] = v
		}
	}
	return treetest.DiffLines(a, b)
}

// nodeID is the one node Core lists, "" for none.
func (h *crashHost) nodeID(t *testing.T) string {
	if n := h.r.nodes(t); len(n) == 1 {
		return n[0]
	}
	return ""
}

// secrets checks that no token issued for this host is in a file of the
// host's /etc, /var/lib, /run or the shared /tmp, and that no token file
// (.enrollment-*) is left anywhere there. A file whose status last changed
// before the host's first token was issued cannot hold a token and is not
// read (writing a file sets its ctime, which no process can set back; the
// margin covers the kernel's coarse clock): the scan reads what the point
// wrote, not the machine's /tmp and the host's copies again.
func (h *crashHost) secrets(t *testing.T, name string) {
	t.Helper()
	etc, varLib := h.Copies()
	dirs := []string{etc, varLib, fmt.Sprintf("/proc/%d/root/run", h.PID()), "/tmp"}
	if len(h.tokens) > 0 {
		cutoff := h.firstToken.Add(-50 * time.Millisecond).UnixNano()
		for _, d := range dirs {
			filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
				if err == nil && e.IsDir() && (p == h.Etc() || p == h.VarLib()) && p != etc && p != varLib {
					return fs.SkipDir // the power-cut mounts of the copies scanned above
				}
				if err == nil && e.IsDir() && filepath.Dir(p) == "/tmp" && strings.HasPrefix(e.Name(), "oac-testhost-") &&
					!strings.HasPrefix(etc, p+"/") {
					// Another test host's directory: not this point's
					// writes, and its file systems (FUSE served by
					// another test process) are not this test's to wait on.
					return fs.SkipDir
				}
				if err != nil || !e.Type().IsRegular() {
					return nil
				}
				var st syscall.Stat_t
				if syscall.Lstat(p, &st) != nil || st.Ctim.Nano() < cutoff || st.Size > 64<<20 {
					return nil
				}
				data, err := os.ReadFile(p)
				if err != nil {
					return nil
				}
				for _, tok := range h.tokens {
					if bytes.Contains(data, []byte(tok)) {
						t.Errorf("%s: a token is in file %s", name, p)
					}
				}
				return nil
			})
		}
	}
	// The shared /tmp is searched for the tokens' bytes only: other
	// engineers' unit tests leave their own .enrollment-* fixtures there.
	for _, d := range dirs[:3] {
		filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(e.Name(), ".enrollment-") {
				t.Errorf("%s: a token file is left: %s", name, p)
			}
			return nil
		})
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// counts starts counting the points of a suite: the phases timed so far
// (the uninterrupted reference run's) are not the points'.
func (r *crashRig) counts() *crashharness.Tally {
	r.tally = crashharness.NewTally()
	return r.tally
}

// reference is the uninterrupted install in a fresh host: its tree, journal
// outcome, records and failpoints.
type reference struct {
	tree             hostTree
	outcome, records string
	points           []crashharness.Point
}

func (r *crashRig) referenceInstall(t *testing.T) reference {
	var ref reference
	t.Run("uninterrupted", func(t *testing.T) {
		h := r.boot(t)
		count := filepath.Join(r.tmp, "install-points")
		res := h.install(t, crashharness.CountTo(count))
		if res.status != 0 {
			t.Fatalf("uninterrupted install: %s", res)
		}
		ref.tree = h.tree(t, h.nodeID(t))
		ref.outcome = h.outcome(t, "install")
		ref.records = h.records(t)
		ref.points = crashharness.Points(t, count, filepath.Join(h.journalDir(), "install.journal"))
		h.secrets(t, "uninterrupted")
		if r.powerCut {
			// A completed installation survives a power cut as it is.
			h.powerCut(t)
			h.converged(t, ref, "uninterrupted, then a power cut")
		}
	})
	if ref.points == nil {
		t.FailNow()
	}
	r.noteImage(t)
	t.Logf("uninterrupted install: %d failpoints (%s); outcome %s", len(ref.points), crashharness.PointMap(ref.points), ref.outcome)
	return ref
}

// converged checks a host after the rerun that completed the install.
func (h *crashHost) converged(t *testing.T, ref reference, name string) {
	t.Helper()
	defer h.r.timed("check")()
	ids := h.r.nodes(t)
	if len(ids) != 1 {
		t.Errorf("%s: Core lists %d nodes, want exactly 1: %v", name, len(ids), ids)
	}
	if got := h.outcome(t, "install"); got != ref.outcome {
		t.Errorf("%s: install journal %q, uninterrupted %q", name, got, ref.outcome)
	}
	if got := h.records(t); got != ref.records {
		t.Errorf("%s: bookkeeping\n%s\nuninterrupted\n%s", name, got, ref.records)
	}
	if d := ref.tree.diff(h.tree(t, h.nodeID(t)), nil); len(d) > 0 {
		t.Errorf("%s: the host differs from the uninterrupted install:\n%s", name, strings.Join(d, "\n"))
	}
	h.secrets(t, name)
}

// treeDied waits until no installer process (root's, or a service-account
// child executed from the sealed copy, argv[0] "oac-node-install") is
// left in the host's namespace: the children die with root (their parent
// death signal). The deadline is generous; a survivor fails the point.
func (h *crashHost) treeDied(t *testing.T, p crashharness.Point) {
	t.Helper()
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", h.PID()))
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left = left[:0]
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, pr := range procs {
			if l, err := os.Readlink(pr + "/ns/pid"); err != nil || l != ns {
				continue
			}
			cmd, _ := os.ReadFile(pr + "/cmdline")
			argv0, _, _ := bytes.Cut(cmd, []byte{0})
			if filepath.Base(string(argv0)) == "oac-node-install" {
				left = append(left, fmt.Sprintf("%s %q", pr, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: installer processes outlived the killed run: %v", p, left)
		}
	}
}

// crash runs cmd with the crash point; it must die there (or finish when
// the point is not reached), then the host loses power in power-cut mode.
func (h *crashHost) crash(t *testing.T, p crashharness.Point, c *crashharness.Tally, run func(env ...string) runResult) {
	t.Helper()
	stop := h.r.timed("killed run")
	res := run(crashharness.CrashAt(p.N))
	switch {
	case res.killed:
	case res.status == 0:
		c.Passed++
	default:
		h.r.skipIfImageLost(t)
		t.Fatalf("%s: the crashing run failed instead of dying: %s", p, res)
	}
	if res.killed {
		h.treeDied(t, p)
	}
	stop()
	if n := h.r.nodes(t); len(n) > 1 {
		t.Fatalf("%s: Core enrolled %d nodes: %v", p, len(n), n)
	}
	if h.r.powerCut {
		h.powerCut(t)
		if h.lost > 0 {
			c.Lost++
		}
	}
}

func TestEndToEndCrashInstall(t *testing.T) {
	r := newCrashRig(t)
	testCrashInstall(t, r)
}

func testCrashInstall(t *testing.T, r *crashRig) {
	ref := r.referenceInstall(t)
	pts := crashharness.Sample(t, ref.points, crashharness.Sampling{Every: 7, Max: 40,
		Always: []string{string(workflow.InstallLease), string(workflow.InstallRegister)}})
	c := r.counts()
	for _, p := range pts {
		c.Point(t, p, func(t *testing.T) {
			h := r.boot(t)
			h.crash(t, p, c, func(env ...string) runResult { return h.install(t, env...) })
			if s := h.interrupted(t, "install"); s == string(workflow.InstallLease) {
				before := h.tree(t, "")
				res := h.rerun(t, h.install)
				if res.status == 0 {
					// The lease step's Verify found no lease (the step never
					// ran) or a complete one: the rerun resumed.
					h.converged(t, ref, p.String())
					c.Resumed++
					return
				}
				if !strings.Contains(res.out, `step "lease" (state lease)`) || !strings.Contains(res.out, "Nothing was changed.") {
					t.Fatalf("%s: the rerun of an interrupted lease step did not refuse naming it: %s", p, res)
				}
				if d := before.diff(h.tree(t, ""), nil); len(d) > 0 {
					t.Fatalf("%s: the refusing rerun changed the host:\n%s", p, strings.Join(d, "\n"))
				}
				h.secrets(t, p.String())
				c.Refused++
				return
			}
			res := h.rerun(t, h.install)
			if res.status != 0 {
				r.skipIfImageLost(t)
				t.Fatalf("%s: the rerun failed: %s", p, res)
			}
			h.converged(t, ref, p.String())
			if r.powerCut {
				h.powerCut(t)
				h.converged(t, ref, p.String()+", rerun, then a power cut")
			}
			c.Resumed++
		})
	}
	c.Log(t, "install, "+r.mode())
}

func (r *crashRig) mode() string {
	if r.powerCut {
		return "power cut"
	}
	return "SIGKILL"
}

// uninstalled checks that the host is as before the install, except what
// the uninstallation keeps: the Runtime image (in the engine, not here) and
// the receipts of the finished journals.
func (h *crashHost) uninstalled(t *testing.T, name string) {
	t.Helper()
	defer h.r.timed("check")()
	if got := h.outcome(t, "uninstall"); !strings.HasPrefix(got, "complete ") {
		t.Errorf("%s: the uninstall journal is %q", name, got)
	}
	// The journals' directories stay with the journals they hold: the
	// uninstall journal and the install journal kept aside as a receipt
	// (CONTRACT §10 removes neither), so status reports the node
	// uninstalled and a later install of the same id starts anew.
	// The record of the runs' output stays too.
	receipts := func(rel string) bool {
		return rel == "var-lib/oac-node-install" || rel == "var-lib/oac-node-install/"+h.r.core.installationID ||
			rel == "var-lib/oac-node-install/runs"
	}
	if d := h.before.diff(h.tree(t, ""), receipts); len(d) > 0 {
		t.Errorf("%s: the host differs from before the install:\n%s", name, strings.Join(d, "\n"))
	}
	h.secrets(t, name)
}

// uninstalledThroughCut checks uninstalled, and in power-cut mode checks it
// again after a cut (name+after names that check): a finished uninstall
// loses nothing.
func (h *crashHost) uninstalledThroughCut(t *testing.T, name, after string) {
	t.Helper()
	h.uninstalled(t, name)
	if h.r.powerCut {
		h.powerCut(t)
		h.uninstalled(t, name+after)
	}
}

func TestEndToEndCrashUninstall(t *testing.T) {
	r := newCrashRig(t)
	testCrashUninstall(t, r)
}

func testCrashUninstall(t *testing.T, r *crashRig) {
	var pts []crashharness.Point
	t.Run("uninterrupted", func(t *testing.T) {
		h := r.boot(t)
		if res := h.install(t); res.status != 0 {
			t.Fatalf("install: %s", res)
		}
		r.noteImage(t)
		count := filepath.Join(r.tmp, "uninstall-points")
		if res := h.uninstall(t, false, crashharness.CountTo(count)); res.status != 0 {
			t.Fatalf("uninterrupted uninstall: %s", res)
		}
		h.uninstalled(t, "uninterrupted uninstall")
		pts = crashharness.Points(t, count, filepath.Join(h.journalDir(), "uninstall.journal"))
	})
	if pts == nil {
		t.FailNow()
	}
	pts = crashharness.Sample(t, pts, crashharness.Sampling{Every: 4, Max: 25})
	c := r.counts()
	for _, p := range pts {
		c.Point(t, p, func(t *testing.T) {
			h := r.boot(t)
			stop := r.timed("install to uninstall")
			if res := h.install(t); res.status != 0 {
				r.skipIfImageLost(t)
				t.Fatalf("install: %s", res)
			}
			stop()
			h.crash(t, p, c, func(env ...string) runResult { return h.uninstall(t, false, env...) })
			res := h.rerun(t, func(t *testing.T, env ...string) runResult { return h.uninstall(t, false, env...) })
			if res.status != 0 {
				t.Fatalf("%s: the uninstall rerun failed: %s", p, res)
			}
			h.uninstalledThroughCut(t, p.String(), ", rerun, then a power cut")
			c.Resumed++
		})
	}
	c.Log(t, "uninstall, "+r.mode())
}

// TestEndToEndCrashInstallThenUninstall interrupts the install at a sample
// of points and uninstalls instead of rerunning it: with --force where the
// refusal asks for it (no host record yet).
func TestEndToEndCrashInstallThenUninstall(t *testing.T) {
	r := newCrashRig(t)
	testCrashInstallThenUninstall(t, r)
}

func testCrashInstallThenUninstall(t *testing.T, r *crashRig) {
	var pts []crashharness.Point
	t.Run("uninterrupted", func(t *testing.T) {
		h := r.boot(t)
		count := filepath.Join(r.tmp, "install-points-2")
		if res := h.install(t, crashharness.CountTo(count)); res.status != 0 {
			t.Fatalf("install: %s", res)
		}
		r.noteImage(t)
		pts = crashharness.Points(t, count, filepath.Join(h.journalDir(), "install.journal"))
	})
	if pts == nil {
		t.FailNow()
	}
	pts = crashharness.Sample(t, pts, crashharness.Sampling{Every: 11, Max: 12})
	c := r.counts()
	forced := 0
	for _, p := range pts {
		c.Point(t, p, func(t *testing.T) {
			h := r.boot(t)
			h.crash(t, p, c, func(env ...string) runResult { return h.install(t, env...) })
			res := h.rerun(t, func(t *testing.T, env ...string) runResult { return h.uninstall(t, false, env...) })
			if res.status != 0 && strings.Contains(res.out, "--force") {
				if !strings.Contains(res.out, "Nothing was changed.") {
					t.Errorf("%s: the refusal does not say that nothing was changed: %s", p, res)
				}
				forced++
				res = h.rerun(t, func(t *testing.T, env ...string) runResult { return h.uninstall(t, true, env...) })
			}
			if res.status != 0 {
				t.Fatalf("%s: uninstall after the interrupted install failed: %s", p, res)
			}
			h.uninstalledThroughCut(t, p.String(), ", then a power cut")
			c.Resumed++
		})
	}
	c.Log(t, "install interrupted, then uninstall, "+r.mode())
	t.Logf("%d of %d uninstalls needed --force", forced, c.N)
}

// The power-cut tests: the same points, each host on the power-cut file
// system (make e2e-powercut; they skip without -tags crashtest).

func TestEndToEndPowerCutInstall(t *testing.T) {
	requirePowerCut(t)
	r := newCrashRig(t)
	r.powerCut = true
	testCrashInstall(t, r)
}

func TestEndToEndPowerCutUninstall(t *testing.T) {
	requirePowerCut(t)
	r := newCrashRig(t)
	r.powerCut = true
	testCrashUninstall(t, r)
}

func TestEndToEndPowerCutInstallThenUninstall(t *testing.T) {
	requirePowerCut(t)
	r := newCrashRig(t)
	r.powerCut = true
	testCrashInstallThenUninstall(t, r)
}
