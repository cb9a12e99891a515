//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/openagentcore/oac-node-install/workflow/crashharness"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The interleaving tests: where the crash tests kill a command at each of
// its points, these pause it there (OAC_PAUSE_AT: the failpoints of root's
// process, and the points between its decisions before and after the host
// lock, which write nothing), run a second command from a fixed list to its
// end or until it waits for the host lock, release the first, let both end,
// and check the host:
//
//   - at most one Core on the host (host records and bookkeeping);
//   - Core lists a node only while the host holds it, unless the second
//     command was `--uninstall --force` (uninstall never removes a node
//     Core lists without --force);
//   - the first install completes, except when the second installed a node
//     of another Core first (then it refuses, naming that Core);
//   - a rerun of the command that decides the host's end state converges:
//     the install on the uninterrupted install's host, the forced
//     uninstall on the host as before the install;
//   - `status` then says ok, or names one next command, which, run, makes
//     it say ok.
//
// Each (point, second command) runs in a fresh test host against the two
// consoles every point shares. make e2e runs a sample (every point between
// the decisions, and a spread of journal points, each with one second
// command in turn); OAC_E2E_INTERLEAVE_ALL=1 (make e2e-interleave) runs
// every point with every second command.

// second is a command run while the first is paused.
type second struct {
	name string
	// run starts it in the host.
	start func(t *testing.T, h *interleaveHost) *running
}

// interleaveHost is a crash host with the second console.
type interleaveHost struct {
	*crashHost
	other *devcore
	// token is the first command's enrollment token.
	token string
}

// running is a command started in the host.
type running struct {
	name string
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	res  runResult
}

func (r *running) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.Write(p)
}

func (r *running) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

func (r *running) ended() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// wait waits for the command's end (at most d) and returns its result.
func (r *running) wait(t *testing.T, d time.Duration) runResult {
	t.Helper()
	select {
	case <-r.done:
		return r.res
	case <-time.After(d):
		t.Fatalf("%s did not end within %s:\n%s", r.name, d, r.output())
		return runResult{}
	}
}

// start runs the installer in the host in the background with args and the
// extra environment; a non-empty token goes on standard input.
func (h *crashHost) start(t *testing.T, name string, env []string, token string, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	argv := append([]string{"env", "-i"}, crashEnv...)
	argv = append(argv, env...)
	argv = append(argv, filepath.Join(h.r.bin, "oac-node-install"))
	if token != "" {
		argv = append(argv, "--enrollment-token-stdin")
	}
	argv = append(argv, args...)
	cmd := h.Command(ctx, argv...)
	cmd.Stdin = strings.NewReader(token + "\n")
	r := &running{name: name, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = r, r
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s in the test host: %v", name, err)
	}
	go func() {
		defer cancel()
		defer close(r.done)
		err := cmd.Wait()
		res := runResult{out: r.output()}
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			res.status = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				res.status = 128 + int(ws.Signal())
				res.killed = ws.Signal() == syscall.SIGKILL
			}
		case err != nil:
			res.status = -1
			res.out += "\n(" + err.Error() + ")"
		}
		r.res = res
	}()
	return r
}

// newToken is a new enrollment token of core, recorded for the host's
// secrets check.
func (h *interleaveHost) newToken(t *testing.T, core *devcore) string {
	t.Helper()
	if len(h.tokens) == 0 {
		h.firstToken = time.Now()
	}
	tok := core.admin(t, "token")
	h.tokens = append(h.tokens, tok)
	return tok
}

func installArgsOf(core *devcore) []string {
	return []string{"--source-url", core.url, "--core-url", core.url, "--provider", "docker",
		"--installation-id", core.installationID, "--core-ca", core.ca}
}

// waitingLine is what a command waiting for the host lock prints.
const waitingLine = "Wait for another node installation or uninstallation on this host"

// seconds are the commands run while the first is paused.
var seconds = []second{
	{"uninstall", func(t *testing.T, h *interleaveHost) *running {
		return h.start(t, "uninstall", nil, "", h.r.uninstallArgs(false)...)
	}},
	{"uninstall --force", func(t *testing.T, h *interleaveHost) *running {
		return h.start(t, "uninstall --force", nil, "", h.r.uninstallArgs(true)...)
	}},
	{"the same install", func(t *testing.T, h *interleaveHost) *running {
		return h.start(t, "the same install", nil, h.token, h.r.installArgs()...)
	}},
	{"a rerun without a token", func(t *testing.T, h *interleaveHost) *running {
		return h.start(t, "a rerun without a token", nil, "", h.r.installArgs()...)
	}},
	{"an install for another Core", func(t *testing.T, h *interleaveHost) *running {
		return h.start(t, "an install for another Core", nil, h.newToken(t, h.other), installArgsOf(h.other)...)
	}},
	{"status", func(t *testing.T, h *interleaveHost) *running {
		return h.start(t, "status", nil, "", "status")
	}},
}

// interleaving is one (point, second command) pair.
type interleaving struct {
	p crashharness.Point
	s second
}

func (i interleaving) String() string { return fmt.Sprintf("%s, then %s", i.p, i.s.name) }

// interleaveSample picks the pairs: with OAC_E2E_INTERLEAVE_ALL=1 every
// point with every second command; else every point between decisions
// (those that are no journal record's) and every k-th journal point, the
// second commands taken in turn.
func interleaveSample(t *testing.T, pts []crashharness.Point) []interleaving {
	var out []interleaving
	if os.Getenv("OAC_E2E_INTERLEAVE_ALL") == "1" {
		for _, p := range pts {
			for _, s := range seconds {
				out = append(out, interleaving{p, s})
			}
		}
		t.Logf("interleavings: every one of %d points with each of %d second commands: %d", len(pts), len(seconds), len(out))
		return out
	}
	every := envInt("OAC_E2E_INTERLEAVE_EVERY", 11)
	k := 0
	for i, p := range pts {
		if strings.HasPrefix(p.Name, "install-") || strings.HasPrefix(p.Name, "uninstall-") || i%every == 0 {
			out = append(out, interleaving{p, seconds[k%len(seconds)]})
			k++
		}
	}
	t.Logf("interleavings: a sample of %d of the %d points × %d second commands (the decision points and every %d-th, the second commands in turn)",
		len(out), len(pts), len(seconds), every)
	return out
}

func TestEndToEndInterleaveInstall(t *testing.T) { testInterleave(t, "install") }

func TestEndToEndInterleaveUninstall(t *testing.T) { testInterleave(t, "uninstall") }

// testInterleave pauses the first command (install, or uninstall of an
// installed node Core removed) at each of its points.
func testInterleave(t *testing.T, first string) {
	r := newCrashRig(t)
	other := startCrashDevcore(t, r.bin)
	t.Cleanup(func() { exec.Command("docker", "network", "rm", "oac-node-"+other.installationID).Run() })

	// The reference: the uninterrupted install, its host and its points
	// (or the uninterrupted uninstall's points).
	var ref reference
	t.Run("uninterrupted", func(t *testing.T) {
		h := r.boot(t)
		count := filepath.Join(r.tmp, first+"-pause-points")
		env := []string{"OAC_PAUSE_COUNT=" + count}
		if first == "uninstall" {
			env = nil
		}
		if res := h.install(t, env...); res.status != 0 {
			t.Fatalf("uninterrupted install: %s", res)
		}
		ref.tree = h.tree(t, h.nodeID(t))
		ref.outcome = h.outcome(t, "install")
		ref.records = h.records(t)
		if first == "uninstall" {
			if res := h.uninstall(t, false, "OAC_PAUSE_COUNT="+count); res.status != 0 {
				t.Fatalf("uninterrupted uninstall: %s", res)
			}
		}
		ref.points = crashharness.Points(t, count, filepath.Join(h.journalDir(), first+".journal"))
	})
	if ref.points == nil {
		t.FailNow()
	}
	r.noteImage(t)
	pairs := interleaveSample(t, ref.points)
	c := r.counts()
	outcomes := map[string]int{}
	for _, pr := range pairs {
		// The name selects with -run: point-017-host_lock-journal-after-sync-then-status.
		state := pr.p.State
		if state == "" {
			state = "none"
		}
		name := fmt.Sprintf("point-%03d-%s-%s-then-%s", pr.p.N, state, pr.p.Name, strings.ReplaceAll(pr.s.name, " ", "-"))
		c.Run(t, name, func(t *testing.T) {
			h := &interleaveHost{crashHost: r.boot(t), other: other}
			t.Cleanup(func() {
				exec.Command("docker", "network", "rm", "oac-node-"+other.installationID).Run()
				for _, n := range nodesOf(t, other) {
					other.admin(t, "remove-node", n)
				}
			})
			if first == "install" {
				outcomes[h.interleaveInstall(t, pr, ref)]++
			} else {
				outcomes[h.interleaveUninstall(t, pr)]++
			}
		})
	}
	d := c.Elapsed()
	t.Logf("%s paused at %d points, a second command each: %d interleavings in %s, %s each%s",
		first, len(ref.points), c.N, d.Round(time.Second), (d / time.Duration(max(c.N, 1))).Round(10*time.Millisecond), c.PerPoint())
	for o, n := range outcomes {
		t.Logf("outcome %dx: %s", n, o)
	}
}

// pauseFirst starts the first command paused at pr's point, then the second
// command, and waits until the second ends or waits for the host lock;
// then it releases the first and waits for both.
func (h *interleaveHost) pauseFirst(t *testing.T, pr interleaving, name, token string, args []string) (fres, sres runResult) {
	t.Helper()
	defer h.r.timed("paused run and second command")()
	dir, err := os.MkdirTemp(h.r.tmp, "pause-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	first := h.start(t, name, []string{fmt.Sprintf("OAC_PAUSE_AT=%d", pr.p.N), "OAC_PAUSE_DIR=" + dir}, token, args...)
	if at := waitPaused(t, first, dir); at != pr.p.Name {
		t.Fatalf("%s: the %s paused at %q", pr, name, at)
	}
	sec := pr.s.start(t, h)
	for deadline := time.Now().Add(time.Minute); !sec.ended() && !strings.Contains(sec.output(), waitingLine); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: the second command neither ended nor waited for the host lock:\n%s", pr, sec.output())
		}
	}
	how := "waited for the host lock"
	if sec.ended() {
		how = "ended while the first was paused"
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fres, sres = first.wait(t, 4*time.Minute), sec.wait(t, 4*time.Minute)
	t.Logf("%s exit %d; %s exit %d (it %s)", name, fres.status, pr.s.name, sres.status, how)
	for _, res := range []runResult{fres, sres} {
		if res.killed || res.status > 2 || res.status < 0 {
			t.Fatalf("%s: a command ended by a signal or with an unexpected code: %s", pr, res)
		}
	}
	return fres, sres
}

// commonInvariants checks what holds after any pair: at most one Core on
// the host; Core lists a node only while the host holds it, but after a
// forced uninstall; a plain uninstall never removes a node Core lists.
func (h *interleaveHost) commonInvariants(t *testing.T, pr interleaving, fres, sres runResult) {
	t.Helper()
	if cores := h.hostCores(t); len(cores) > 1 {
		t.Fatalf("%s: the host holds nodes of %d Cores: %v\nfirst: %s\nsecond: %s", pr, len(cores), cores, fres, sres)
	}
	for _, core := range []*devcore{h.r.core, h.other} {
		if len(nodesOf(t, core)) > 0 && !h.holds(core) && pr.s.name != "uninstall --force" {
			t.Fatalf("%s: Core %s lists the node, but the host no longer holds it\nfirst: %s\nsecond: %s", pr, core.url, fres, sres)
		}
	}
}

// interleaveInstall pauses an install at pr's point.
func (h *interleaveHost) interleaveInstall(t *testing.T, pr interleaving, ref reference) string {
	t.Helper()
	r := h.r
	h.token = h.newToken(t, r.core)
	fres, sres := h.pauseFirst(t, pr, "install", h.token, r.installArgs())
	defer r.timed("check")()
	h.commonInvariants(t, pr, fres, sres)
	otherFirst := pr.s.name == "an install for another Core" && h.holds(h.other)
	switch {
	case otherFirst:
		// The other Core's node took the host while the install was
		// paused before deciding: the install refuses, naming it.
		if fres.status == 0 || !strings.Contains(fres.out, "Nothing was changed.") {
			t.Fatalf("%s: the install did not refuse the host of another Core: %s", pr, fres)
		}
		if res := h.start(t, "the other install again", nil, "", installArgsOf(h.other)...).wait(t, 4*time.Minute); res.status != 0 {
			t.Fatalf("%s: the other Core's install does not converge: %s", pr, res)
		}
	case fres.status != 0:
		t.Fatalf("%s: the install failed: %s\nsecond: %s", pr, fres, sres)
	case pr.s.name == "an install for another Core":
		if sres.status == 0 || !strings.Contains(sres.out, "Nothing was changed.") {
			t.Fatalf("%s: the install for another Core did not refuse: %s", pr, sres)
		}
	case pr.s.name == "uninstall" && sres.status == 0:
		t.Fatalf("%s: uninstall succeeded while Core lists the node: %s", pr, sres)
	}
	// The rerun of the command that decides the host's end state.
	switch {
	case otherFirst:
	case pr.s.name == "uninstall --force" && !h.holds(r.core):
		if res := h.uninstall(t, true); res.status != 0 {
			t.Fatalf("%s: the forced uninstall's rerun failed: %s", pr, res)
		}
		h.uninstalled(t, pr.String())
	default:
		if res := h.install(t); res.status != 0 {
			t.Fatalf("%s: the install's rerun failed: %s", pr, res)
		}
		h.converged(t, ref, pr.String())
	}
	h.statusSettles(t, pr)
	h.secrets(t, pr.String())
	return fmt.Sprintf("install %s, %s %s", verdict(fres), pr.s.name, verdict(sres))
}

// interleaveUninstall installs, removes the node in Core, and pauses the
// uninstall at pr's point.
func (h *interleaveHost) interleaveUninstall(t *testing.T, pr interleaving) string {
	t.Helper()
	r := h.r
	h.token = h.newToken(t, r.core)
	stop := r.timed("install to uninstall")
	if res := h.run(t, nil, h.token, r.installArgs()...); res.status != 0 {
		t.Fatalf("install: %s", res)
	}
	for _, n := range r.nodes(t) {
		r.core.admin(t, "remove-node", n)
	}
	stop()
	fres, sres := h.pauseFirst(t, pr, "uninstall", "", r.uninstallArgs(false))
	defer r.timed("check")()
	h.commonInvariants(t, pr, fres, sres)
	if fres.status != 0 {
		t.Fatalf("%s: the uninstall failed: %s\nsecond: %s", pr, fres, sres)
	}
	switch {
	case pr.s.name == "an install for another Core" && h.holds(h.other):
		// It waited for the uninstall, then installed on the empty host.
		if res := h.start(t, "the other install again", nil, "", installArgsOf(h.other)...).wait(t, 4*time.Minute); res.status != 0 {
			t.Fatalf("%s: the other Core's install does not converge: %s", pr, res)
		}
	case h.holds(r.core):
		t.Fatalf("%s: the host holds the node after its uninstall\nuninstall: %s\nsecond: %s", pr, fres, sres)
	default:
		if res := h.uninstall(t, false); res.status != 0 {
			t.Fatalf("%s: the uninstall's rerun failed: %s", pr, res)
		}
		h.uninstalled(t, pr.String())
	}
	h.statusSettles(t, pr)
	h.secrets(t, pr.String())
	return fmt.Sprintf("uninstall %s, %s %s", verdict(fres), pr.s.name, verdict(sres))
}

// verdict is a command's end, for the counts.
func verdict(res runResult) string {
	if res.status == 0 {
		return "ok"
	}
	if strings.Contains(res.out, "Nothing was changed.") {
		return "refused"
	}
	return fmt.Sprintf("failed (%d)", res.status)
}

// waitPaused waits until the first command pauses (or fails the test when
// it ends first) and returns the point's name.
func waitPaused(t *testing.T, first *running, dir string) string {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(dir, "paused")); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			return strings.TrimSpace(string(b))
		}
		if first.ended() {
			t.Fatalf("the install ended before its pause point: %s", first.res)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the install did not reach its pause point:\n%s", first.output())
		}
	}
}

// hostCores are the Core URLs of the host's records (/etc/oac-node/*.json)
// and of its bookkeeping's installations.
func (h *interleaveHost) hostCores(t *testing.T) []string {
	t.Helper()
	etc, _ := h.Copies()
	seen := map[string]bool{}
	var out []string
	add := func(u string) {
		if u != "" && !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	paths, _ := filepath.Glob(filepath.Join(etc, "oac-node", "*.json"))
	for _, p := range paths {
		var rec struct {
			CoreURL string `json:"core_url"`
		}
		if b, err := os.ReadFile(p); err == nil && json.Unmarshal(b, &rec) == nil {
			add(rec.CoreURL)
		}
	}
	for _, m := range regexp.MustCompile(`CoreURL:(\S+)`).FindAllStringSubmatch(h.records(t), -1) {
		add(m[1])
	}
	return out
}

// holds reports whether the host has core's node: its host record.
func (h *interleaveHost) holds(core *devcore) bool {
	etc, _ := h.Copies()
	_, err := os.Stat(filepath.Join(etc, "oac-node", core.installationID+".json"))
	return err == nil
}

// nodesOf lists the node ids core has enrolled and not removed.
func nodesOf(t *testing.T, core *devcore) []string {
	t.Helper()
	var listed struct {
		Nodes []struct {
			NodeID string `json:"node_id"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(core.admin(t, "nodes")), &listed); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range listed.Nodes {
		ids = append(ids, n.NodeID)
	}
	return ids
}

var (
	nextLine = regexp.MustCompile(`(?m)^  next:\s+(.*)$`)
	// installerCommand is a command of the installer in advice: the whole
	// next line, or the part of it in backquotes.
	installerCommand = regexp.MustCompile("^sudo oac-node-install ([^`]*)$|`sudo oac-node-install ([^`]*)`")
)

// statusSettles runs status: it says ok (exit 0), or needs attention (exit
// 2) naming one next step, which must hold a command of the installer; that
// command is run (a console URL the host does not record filled in, as the
// operator would), and status must then say ok.
func (h *interleaveHost) statusSettles(t *testing.T, pr interleaving) {
	t.Helper()
	res := h.run(t, nil, "", "status")
	if res.status == 0 {
		return
	}
	if res.status != 2 {
		t.Fatalf("%s: status failed: %s", pr, res)
	}
	nexts := nextLine.FindAllStringSubmatch(res.out, -1)
	if len(nexts) != 1 {
		t.Fatalf("%s: status needs attention with %d next steps, want one: %s", pr, len(nexts), res)
	}
	m := installerCommand.FindStringSubmatch(nexts[0][1])
	if m == nil {
		t.Fatalf("%s: status's next step names no command of the installer: %s", pr, res)
	}
	args := strings.Fields(strings.ReplaceAll(m[1]+m[2], "<console URL>", h.r.core.url))
	if got := h.run(t, nil, "", args...); got.status != 0 {
		t.Fatalf("%s: status's next command %q failed: %s\nstatus: %s", pr, args, got, res)
	}
	if got := h.run(t, nil, "", "status"); got.status != 0 {
		t.Fatalf("%s: status after its next command %q: %s", pr, args, got)
	}
}
