//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	coreapi "github.com/openagentcore/oac-node-install/cmd/oac-devcore/devcore"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
)

// genDeadline bounds each wait of the generation test. It only turns a hang
// into a failure with a reason; nothing asserts how long a step takes.
const genDeadline = 3 * time.Minute

// genHost runs commands as root inside a test host, with the PATH and HOME
// of an operator's shell.
type genHost struct {
	t    *testing.T
	ctx  context.Context
	h    *testhost.Host
	home string
	bin  string
}

func (g *genHost) env() []string {
	return []string{"env", "HOME=" + g.home, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
}

// run runs a shell command line.
func (g *genHost) run(script string) testhost.Result {
	g.t.Helper()
	res, err := g.h.Exec(g.ctx, append(g.env(), "bash", "-c", script)...)
	if err != nil {
		g.t.Fatalf("exec: %v", err)
	}
	return res
}

// paste runs script as an operator pastes it: the shell reads it from its
// input.
func (g *genHost) paste(script string) testhost.Result {
	g.t.Helper()
	cmd := g.h.Command(g.ctx, append(g.env(), "bash")...)
	cmd.Stdin = strings.NewReader(script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	res := testhost.Result{}
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			g.t.Fatalf("exec: %v", err)
		}
		res.Status = ee.ExitCode()
	}
	res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	return res
}

// installer runs oac-node-install with args.
func (g *genHost) installer(args ...string) testhost.Result {
	g.t.Helper()
	return g.run(filepath.Join(g.bin, "oac-node-install") + " " + strings.Join(args, " "))
}

// logStatus prints `status` as an operator sees it, and returns its exit
// status.
func (g *genHost) logStatus(when string) int {
	g.t.Helper()
	res := g.installer("status")
	g.t.Logf("status %s (exit %d):\n%s%s", when, res.Status, res.Stdout, res.Stderr)
	return res.Status
}

// workflowReport is the part of one workflow of `status --json` the test
// reads.
type workflowReport struct {
	Workflow string `json:"workflow"`
	Binding  *struct {
		Generation int64 `json:"generation"`
	} `json:"binding"`
	State     string         `json:"state"`
	Condition string         `json:"condition"`
	Attempts  map[string]int `json:"attempts"`
	Pending   *struct {
		Step    string `json:"step"`
		Attempt int    `json:"attempt"`
	} `json:"pending"`
}

// workflow returns the named workflow of generation gen from status
// --json, or nil; raw is the document.
func (g *genHost) workflow(name string, gen int64) (w *workflowReport, status int, raw string) {
	g.t.Helper()
	res := g.installer("status", "--json")
	var doc struct {
		Installations []struct {
			Workflows []workflowReport `json:"workflows"`
		} `json:"installations"`
	}
	if err := json.Unmarshal(res.Stdout, &doc); err != nil {
		g.t.Fatalf("status --json (exit %d): %v\n%s%s", res.Status, err, res.Stdout, res.Stderr)
	}
	for _, inst := range doc.Installations {
		for i, wf := range inst.Workflows {
			if wf.Workflow == name && wf.Binding != nil && wf.Binding.Generation == gen {
				return &inst.Workflows[i], res.Status, string(res.Stdout)
			}
		}
	}
	return nil, res.Status, string(res.Stdout)
}

// generation returns generation gen's report from leases --json, or nil.
func (g *genHost) generation(gen int64) (*lease.GenerationReport, string) {
	g.t.Helper()
	res := g.installer("leases", "--json")
	var doc struct {
		Nodes []struct {
			Generations []lease.GenerationReport `json:"generations"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(res.Stdout, &doc); err != nil {
		g.t.Fatalf("leases --json (exit %d): %v\n%s%s", res.Status, err, res.Stdout, res.Stderr)
	}
	for _, n := range doc.Nodes {
		for i := range n.Generations {
			if n.Generations[i].Generation == gen {
				return &n.Generations[i], string(res.Stdout)
			}
		}
	}
	return nil, string(res.Stdout)
}

// holder returns gen's holder in mode, or nil.
func holder(r *lease.GenerationReport, mode string) *lease.Holder {
	if r == nil {
		return nil
	}
	for i := range r.Holders {
		if r.Holders[i].Mode == mode && !r.Holders[i].Waiting {
			return &r.Holders[i]
		}
	}
	return nil
}

// until polls cond until it holds; what names the wait in the failure,
// detail says what was seen last.
func (g *genHost) until(what string, cond func() bool, detail func() string) {
	g.t.Helper()
	for deadline := time.Now().Add(genDeadline); !cond(); time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			console := g.h.Console()
			if len(console) > 8192 {
				console = console[len(console)-8192:]
			}
			g.t.Fatalf("%s: not reached within %s; last seen:\n%s\ntest host console (tail):\n%s", what, genDeadline, detail(), console)
		}
	}
}

// nodeLog is where the node program's standard error goes in the
// generation test: the test host runs no journald, so a drop-in of the
// test's own (in the test host's private /run, not the installer's unit)
// sends it to a file.
const nodeLog = "/run/oac-node-e2e.log"

// logNodeStderr has the node's unit write its standard error to nodeLog.
func (g *genHost) logNodeStderr(id string) {
	g.t.Helper()
	dir := "/run/systemd/system/oac-node-" + id + ".service.d"
	if res := g.run("mkdir -p " + dir + " && printf '[Service]\\nStandardError=append:" + nodeLog + "\\n' > " + dir + "/e2e-log.conf"); res.Status != 0 {
		g.t.Fatalf("node log drop-in: exit %d %s", res.Status, res.Stderr)
	}
}

// nodeLogLines returns the lines of the node's log that contain want.
func (g *genHost) nodeLogLines(want string) []string {
	g.t.Helper()
	res := g.run("cat " + nodeLog)
	var out []string
	for _, l := range strings.Split(string(res.Stdout), "\n") {
		if strings.Contains(l, want) {
			out = append(out, l)
		}
	}
	return out
}

// TestEndToEndGeneration: a node installed in the test host follows a
// deployment change, driven as the platform's node program drives it: the
// node finds generation-preparer.pyz (0600) in its node root and runs
// python3 generation-preparer.pyz, which executes the retained helper in
// the same process and process group. Core publishes generation 2 while
// the console holds artifact downloads halfway; the node calls its
// retained helper, and
// status and leases show the prepare in progress and the helper holding
// the generation's lease. The helper is killed with SIGKILL mid-download;
// the node's next call resumes the journal (a second attempt of the
// download), the generation is prepared and Core serves it. A drop grant
// for generation 1 then has it collected.
func TestEndToEndGeneration(t *testing.T) {
	// An image archive of a few MiB (10 MiB of payload compresses to about
	// 4.4): the downloader writes its part file a buffer (1 MiB) at a time,
	// and the hold stops halfway.
	bin, core, h := endToEnd(t, "--image-payload-mib", "10")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	g := &genHost{t: t, ctx: ctx, h: h, home: t.TempDir(), bin: bin}

	// Install the node with the command Web generates.
	g.logNodeStderr(core.installationID)
	res := g.paste(core.bootstrap(t, core.admin(t, "token")))
	t.Logf("install (exit %d):\n%s%s", res.Status, res.Stdout, res.Stderr)
	if res.Status != 0 {
		t.Fatalf("the generated command exited %d", res.Status)
	}
	root := "/var/lib/oac-node/.oac/nodes/" + core.installationID
	pyz := root + "/generation-preparer.pyz"
	res = g.run("stat -c '%n %a %U %F %s bytes' " + root + "/generation-preparer " + pyz)
	t.Logf("the retained helper and its launcher:\n%s%s", res.Stdout, res.Stderr)
	if want := pyz + " 600 oac-node regular file "; res.Status != 0 || !strings.Contains(string(res.Stdout), want) {
		t.Errorf("the launcher is not %q", want)
	}
	// The node found the launcher and runs in multi-generation mode.
	mode := "multi-generation mode: generations are prepared and collected by python3 " + pyz
	g.until("the node reports multi-generation mode", func() bool { return len(g.nodeLogLines(mode)) > 0 },
		func() string { return strings.Join(g.nodeLogLines("oac-node-dev"), "\n") })
	t.Logf("node log: %s", g.nodeLogLines(mode)[0])
	if st := g.logStatus("after the installation"); st != 0 {
		t.Errorf("status exited %d after a healthy installation", st)
	}
	// The node holds a shared reference on the generation it serves.
	g1, raw := g.generation(1)
	if holder(g1, "shared") == nil {
		t.Errorf("generation 1 has no shared holder while the node serves it:\n%s", raw)
	}

	// Core publishes generation 2 while artifact downloads are held.
	core.admin(t, "pause-artifacts")
	var g2 coreapi.GenerationView
	if err := json.Unmarshal([]byte(core.admin(t, "publish-generation")), &g2); err != nil || g2.Generation != 2 {
		t.Fatalf("publish-generation: %+v %v", g2, err)
	}
	t.Logf("Core published generation 2 (specification %s)", g2.SpecificationDigest)
	var hold coreapi.ArtifactHoldView
	g.until("the helper's artifact download is held", func() bool {
		json.Unmarshal([]byte(core.admin(t, "artifacts")), &hold)
		return hold.Held > 0
	}, func() string { return fmt.Sprintf("hold %+v; Core's nodes %s", hold, core.admin(t, "nodes")) })

	// While the download is held: the helper holds generation 2's lease
	// exclusively, and the prepare journal is in its download step.
	var helper *lease.Holder
	g.until("leases shows the helper holding generation 2's lease", func() bool {
		r, s := g.generation(2)
		raw, helper = s, holder(r, "exclusive")
		return helper != nil
	}, func() string { return raw })
	t.Logf("generation 2's lease holder: pid %d (%s), uid %d, %s, from %s", helper.PID, helper.Command, helper.UID, helper.Mode, helper.Source)
	if filepath.Base(helper.Command) != "generation-preparer" {
		t.Errorf("generation 2's lease is held by %q, not the retained helper", helper.Command)
	}
	// The process the node started as python3 generation-preparer.pyz is
	// now the helper: its own process group, the node program's child.
	pid := strconv.Itoa(helper.PID)
	res = g.run("read -r _ _ _ ppid pgid _ < /proc/" + pid + "/stat && echo \"pgid=$pgid parent=$(readlink /proc/$ppid/exe)\" && readlink /proc/" + pid + "/exe")
	t.Logf("the helper process %s: %s", pid, strings.ReplaceAll(strings.TrimSpace(string(res.Stdout)), "\n", ", exe="))
	if !strings.HasPrefix(string(res.Stdout), "pgid="+pid+" parent="+root+"/native/bin/oac-node\n") {
		t.Errorf("the helper process is not in its own group under the node program: %s%s", res.Stdout, res.Stderr)
	}
	res = g.installer("leases", "--installation-id", core.installationID)
	t.Logf("leases during the prepare (exit %d):\n%s%s", res.Status, res.Stdout, res.Stderr)
	res = g.installer("status")
	t.Logf("status during the prepare (exit %d):\n%s%s", res.Status, res.Stdout, res.Stderr)
	if !strings.Contains(string(res.Stdout), "pid "+strconv.Itoa(helper.PID)) || res.Status != 0 {
		// A running prepare needs no attention: status names the process
		// that holds its journal and exits 0.
		t.Errorf("status does not show the prepare as running by pid %d with exit 0 (exit %d)", helper.PID, res.Status)
	}
	wf, _, raw := g.workflow("prepare", 2)
	if wf == nil || wf.Pending == nil || wf.Pending.Step != "download" {
		t.Fatalf("status --json during the held download: prepare of generation 2 %+v\n%s", wf, raw)
	}
	// The first buffers of the image archive are in its resumable part
	// file.
	var partial string
	g.until("the held download's part file has bytes", func() bool {
		res := g.run("find /var/lib/oac-node/.oac/nodes/" + core.installationID + " -name '.*.partial' -size +0 -printf '%p %s bytes\\n'")
		partial = strings.TrimSpace(string(res.Stdout))
		return partial != ""
	}, func() string { return partial })
	t.Logf("mid-download: %s", partial)

	// SIGKILL the helper mid-download, then let downloads continue: the
	// node's next call resumes the prepare.
	if res := g.run("kill -KILL " + strconv.Itoa(helper.PID)); res.Status != 0 {
		t.Fatalf("kill the helper: exit %d %s", res.Status, res.Stderr)
	}
	g.until("the killed helper is gone", func() bool {
		return g.run("kill -0 "+strconv.Itoa(helper.PID)).Status != 0
	}, func() string { return "" })
	core.admin(t, "resume-artifacts")
	var node coreapi.NodeView
	g.until("Core serves generation 2", func() bool {
		var nodes struct {
			Nodes []coreapi.NodeView `json:"nodes"`
		}
		json.Unmarshal([]byte(core.admin(t, "nodes")), &nodes)
		if len(nodes.Nodes) == 1 {
			node = nodes.Nodes[0]
		}
		return node.Rollout.ServingGeneration == 2
	}, func() string { return fmt.Sprintf("%+v", node) })
	prepare := "python3 " + pyz + " --installation-id " + core.installationID + " --generation-action prepare --generation 2 --specification-digest " + g2.SpecificationDigest
	runs := g.nodeLogLines(prepare)
	for _, l := range runs {
		t.Logf("node log: %s", l)
	}
	if len(runs) < 2 {
		// The first run was killed mid-download; the node ran it again.
		t.Errorf("the node's log shows %d runs of %q, want 2 or more", len(runs), prepare)
	}
	wf, _, raw = g.workflow("prepare", 2)
	if wf == nil || wf.Condition != "complete" || wf.Attempts["download"] < 2 {
		t.Fatalf("after the resumed prepare: prepare of generation 2 %+v, want complete with a second download attempt\n%s", wf, raw)
	}
	t.Logf("prepare of generation 2: %s, download attempts %d", wf.Condition, wf.Attempts["download"])
	// The second attempt resumed the part file: it asked for the rest.
	json.Unmarshal([]byte(core.admin(t, "artifacts")), &hold)
	if hold.Ranged == 0 {
		t.Errorf("no artifact request asked for a range after the helper was killed mid-download: %+v", hold)
	}
	g.logStatus("after generation 2 is prepared")
	g.until("the node holds a shared reference on generation 2", func() bool {
		r, s := g.generation(2)
		raw = s
		return holder(r, "shared") != nil && holder(r, "exclusive") == nil
	}, func() string { return raw })

	// A drop grant for generation 1: the node collects it.
	core.admin(t, "drop-generation", "1")
	g.until("generation 1 is collected", func() bool {
		wf, _, raw = g.workflow("collect", 1)
		return wf != nil && wf.Condition == "complete"
	}, func() string { return raw })
	collect := "python3 " + pyz + " --installation-id " + core.installationID + " --generation-action collect --generation 1 --specification-digest "
	runs = g.nodeLogLines(collect)
	for _, l := range append(runs, g.nodeLogLines("collect of generation 1 complete")...) {
		t.Logf("node log: %s", l)
	}
	if len(runs) == 0 {
		t.Errorf("the node's log shows no run of %q", collect)
	}
	g1, raw = g.generation(1)
	if g1 == nil || !g1.Records.Dropped || len(g1.Holders) != 0 {
		t.Errorf("leases after the collection of generation 1:\n%s", raw)
	}
	res = g.installer("leases", "--installation-id", core.installationID)
	t.Logf("leases after the collection (exit %d):\n%s%s", res.Status, res.Stdout, res.Stderr)
	if st := g.logStatus("after the collection of generation 1"); st != 0 {
		t.Errorf("status exited %d after the collection", st)
	}
	t.Logf("Core's deployment: %s", core.admin(t, "deployment"))
}
