//go:build crashtest

package generation

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
	"github.com/openagentcore/oac-node-install/workflow/crashharness"
)

// TestGenerationCrashChild is the process the crash harness kills where
// the shipped command cannot run as the node account (the tests do not run
// as root): one helper run on the node under $OAC_GEN_CRASH_HOME, with the
// fake Docker Engine whose state lives there too.
func TestGenerationCrashChild(t *testing.T) {
	home := os.Getenv("OAC_GEN_CRASH_HOME")
	if home == "" {
		t.Skip("runs only as the crash harness's child process")
	}
	g, _ := strconv.ParseInt(os.Getenv("OAC_GEN_CRASH_GENERATION"), 10, 64)
	opts := noderoot.Options{
		Action:   os.Getenv("OAC_GEN_CRASH_ACTION"),
		Identity: lease.Identity{InstallationID: testID, Generation: g, SpecificationDigest: os.Getenv("OAC_GEN_CRASH_DIGEST")},
		Home:     home,
		UID:      os.Getuid(),
		Docker: func(context.Context, string) (noderoot.Docker, error) {
			return &dockertest.FileEngine{Path: filepath.Join(home, "docker-engine.json")}, nil
		},
		Log: os.Stderr,
	}
	e, err := noderoot.NewEnv(opts)
	if err == nil {
		_, err = Run(context.Background(), e)
		e.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
}

// crashCase describes one workflow under the harness: what the node looks
// like before the run, and the generation the run is for.
type crashCase struct {
	action string
	mode   crashharness.Mode
	// recrash also kills every rerun at each of its points.
	recrash bool
	// inspect names the workflow's Inspect states, where (and only where)
	// an interrupted run must refuse.
	inspect []string
	// prepare makes the node's state before the killed run (beyond the
	// installation's).
	prepare func(t *testing.T, n crashNode, b *fixtureRelease, spec *release.Specification)
}

// crashNode is the template node a crash case prepares.
type crashNode interface {
	run(action string, g int64, spec *release.Specification) error
	path(rel ...string) string
	// forget removes an image from the Docker Engine.
	forget(t testing.TB, id image.Identity)
}

func (n *testNode) forget(t testing.TB, id image.Identity) {
	if err := n.docker.RemoveImage(id); err != nil {
		t.Fatal(err)
	}
}

// runCrash runs the harness over one workflow, through the shipped command
// line as the node account where the tests run as root. Every sandbox is reached
// through one fixed path (a symbolic link re-pointed before each run), so
// the absolute paths written into configurations are the same in every
// sandbox and the harness can compare them byte for byte.
func runCrash(t *testing.T, c crashCase) crashharness.Summary {
	a, b := buildRelease(t, commitA), buildRelease(t, commitB)
	srv := newTestServer(t, a, b)
	spec := b.Spec(t, release.ProviderDocker, 2)
	srv.SetSpec(2, spec)
	fixed := filepath.Join(t.TempDir(), "node")
	point := func(dir string) {
		os.Remove(fixed)
		if err := os.Symlink(dir, fixed); err != nil {
			t.Fatal(err)
		}
	}
	node := layout.Node{Root: layout.NodeRootIn(fixed, testID)}
	journalOf := func(dir string) string {
		return filepath.Join(dir, strings.TrimPrefix(node.GenerationJournal(c.action, 2), fixed))
	}
	var mu sync.Mutex
	identityMissing := map[string]bool{}
	// The node before the run is built once and copied into every sandbox.
	template := filepath.Join(t.TempDir(), "template")
	mkdir(t, template)
	point(template)
	uid := os.Getuid()
	var cli *shippedCLI
	var n crashNode
	// The shipped command runs as the node account, which needs root to
	// start; elsewhere this test binary runs the helper in its place.
	if os.Geteuid() == 0 {
		cli = newShippedCLI(t)
		uid = nodeAccount
		// The node account reaches the sandboxes through these.
		reachable(template)
		reachable(fixed)
		gn := generationtest.SetupNode(t, fixed, srv, release.ProviderDocker, a, cli.host)
		cli.images = []dockertest.Image{{ID: a.Image.ConfigDigest, OS: "linux", Architecture: "amd64"}}
		cli.reset()
		chownTree(t, template)
		n = &cliNode{cli: cli, home: fixed, root: gn.Layout.Root}
	} else {
		n = setupNode(t, fixed, srv, release.ProviderDocker, a)
	}
	if c.prepare != nil {
		c.prepare(t, n, b, spec)
	}
	sum := crashharness.Run(t, crashharness.Target{
		Setup: func(t *testing.T, dir string) {
			treetest.Copy(t, template, dir)
			point(dir)
			rebindLeases(t, node.Generations())
			if cli != nil {
				chownTree(t, dir)
				cli.reset()
			}
		},
		Command: func(dir string) *exec.Cmd {
			point(dir)
			if cli != nil {
				return cli.command(fixed, c.action, 2, spec.Digest())
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestGenerationCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "OAC_GEN_CRASH_HOME="+fixed, "OAC_GEN_CRASH_ACTION="+c.action,
				"OAC_GEN_CRASH_GENERATION=2", "OAC_GEN_CRASH_DIGEST="+spec.Digest())
			return cmd
		},
		InspectStates: c.inspect,
		Interrupted: func(dir string) string {
			rep, err := workflow.InspectJournal(journalOf(dir), workflow.Lookup)
			if err != nil || rep.Pending == nil {
				return ""
			}
			if slices.Contains(c.inspect, string(rep.Pending.State)) {
				reports, _ := lease.Inspect(filepath.Join(dir, strings.TrimPrefix(node.Generations(), fixed)), uid)
				for _, r := range reports {
					if r.Generation == 2 && r.Lease.State == lease.StateIdentityMissing {
						mu.Lock()
						identityMissing[filepath.Base(dir)] = true
						mu.Unlock()
					}
				}
			}
			return string(rep.Pending.State)
		},
		Outcome: func(dir string) (string, error) {
			rep, err := workflow.InspectJournal(journalOf(dir), workflow.Lookup)
			if err != nil {
				return "", err
			}
			var steps []string
			for _, s := range rep.Completed {
				steps = append(steps, s.Step)
			}
			out := fmt.Sprintf("%s %s %s", rep.Condition, rep.State, strings.Join(steps, ","))
			reports, err := lease.Inspect(filepath.Join(dir, strings.TrimPrefix(node.Generations(), fixed)), uid)
			if err != nil {
				return "", err
			}
			for _, r := range reports {
				out += fmt.Sprintf("; generation %d lease %s records %+v", r.Generation, r.Lease.State, r.Records)
			}
			return out, nil
		},
		Ignore: func(rel string) bool {
			// Journals are compared through Outcome; lease identities
			// name inode numbers, which differ between sandboxes.
			return strings.Contains(rel, "/journals/") || strings.HasSuffix(rel, "/journals") || strings.HasSuffix(rel, ".lease-identity")
		},
		Mode:    c.mode,
		Recrash: c.recrash,
	})
	for _, n := range sum.Refused {
		// A power cut loses the lease created at this point with its
		// directory entry; a SIGKILL leaves it without its identity.
		if c.mode == crashharness.Kill && sum.Points[n-1] == "lease-created" && !identityMissing[fmt.Sprintf("crash-%03d", n)] {
			t.Errorf("point %d (lease-created): leases does not report identity-missing", n)
		}
	}
	return sum
}

func TestCrashPrepare(t *testing.T) {
	t.Parallel()
	checkPrepare(t, runCrash(t, prepareCase(crashharness.Kill)))
}

// TestPowerCutPrepare cuts power at every point of prepare, and again at
// every point of each rerun.
func TestPowerCutPrepare(t *testing.T) {
	t.Parallel()
	c := prepareCase(crashharness.PowerCut)
	c.recrash = true
	checkPrepare(t, runCrash(t, c))
}

func prepareCase(mode crashharness.Mode) crashCase {
	return crashCase{action: noderoot.ActionPrepare, mode: mode, inspect: []string{string(workflow.PrepareLease)}}
}

func checkPrepare(t *testing.T, sum crashharness.Summary) {
	t.Helper()
	var leaseCreated bool
	for _, n := range sum.Refused {
		leaseCreated = leaseCreated || sum.Points[n-1] == "lease-created"
	}
	t.Logf("refused for inspection at %v", sum.Refused)
	if !leaseCreated {
		t.Error("the lease-initialization point did not refuse")
	}
	if len(sum.Resumed) == 0 {
		t.Error("no crash point resumed")
	}
}

func TestCrashRepair(t *testing.T) {
	t.Parallel()
	runCrash(t, repairCase(crashharness.Kill))
}

func TestPowerCutRepair(t *testing.T) {
	t.Parallel()
	runCrash(t, repairCase(crashharness.PowerCut))
}

// repairCase repairs a prepared generation whose seccomp profile and
// Runtime archive were removed and whose image the engine forgot.
func repairCase(mode crashharness.Mode) crashCase {
	return crashCase{action: noderoot.ActionRepair, mode: mode, prepare: func(t *testing.T, n crashNode, b *fixtureRelease, spec *release.Specification) {
		if err := n.run(noderoot.ActionPrepare, 2, spec); err != nil {
			t.Fatalf("prepare: %v", err)
		}
		for _, rel := range []string{release.PathSeccomp, release.PathRuntimeImage} {
			if err := os.Remove(n.path("releases", commitB, rel)); err != nil {
				t.Fatal(err)
			}
		}
		n.forget(t, b.Image)
	}}
}

func TestCrashCollect(t *testing.T) {
	t.Parallel()
	runCrash(t, collectCase(crashharness.Kill))
}

func TestPowerCutCollect(t *testing.T) {
	t.Parallel()
	runCrash(t, collectCase(crashharness.PowerCut))
}

// collectCase collects a prepared generation.
func collectCase(mode crashharness.Mode) crashCase {
	return crashCase{action: noderoot.ActionCollect, mode: mode, prepare: func(t *testing.T, n crashNode, b *fixtureRelease, spec *release.Specification) {
		if err := n.run(noderoot.ActionPrepare, 2, spec); err != nil {
			t.Fatalf("prepare: %v", err)
		}
	}}
}

// rebindLeases rewrites every lease identity of a copied node with the
// device and inode of its copied lease, as the installation would have
// recorded them.
func rebindLeases(t *testing.T, dir string) {
	t.Helper()
	leases, _ := filepath.Glob(filepath.Join(dir, "*.lease"))
	for _, l := range leases {
		var st syscall.Stat_t
		if err := syscall.Stat(l, &st); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(l + "-identity")
		if err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		if err := json.Unmarshal(data, &rec); err != nil {
			t.Fatal(err)
		}
		rec["device"], rec["inode"] = st.Dev, st.Ino
		out, _ := json.MarshalIndent(rec, "", "  ")
		if err := os.WriteFile(l+"-identity", append(out, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
