//go:build crashtest

package crashharness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/powercut"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
)

// Mode is how the harness interrupts the process under test.
type Mode int

const (
	// Kill: SIGKILL at the crash point. The page cache survives, so a
	// missing fsync goes unseen.
	Kill Mode = iota
	// PowerCut: SIGKILL at the crash point, then a power cut of the
	// sandbox, which lives on a power-cut file system: what was not made
	// durable is lost before the rerun.
	PowerCut
)

func (m Mode) String() string {
	if m == PowerCut {
		return "power cut"
	}
	return "SIGKILL"
}

// Target describes the process under test.
type Target struct {
	// Command returns the command that runs the workflow in sandbox dir.
	// The harness adds the crash variables to its environment.
	Command func(dir string) *exec.Cmd
	// Setup prepares a fresh sandbox before the first run (optional). In
	// PowerCut mode everything it leaves is durable.
	Setup func(t *testing.T, dir string)
	// InspectStates names the workflow's Inspect states: exactly where a
	// crash leaves one of them interrupted must the rerun refuse, and
	// change nothing; a refusal anywhere else fails the test.
	InspectStates []string
	// Interrupted returns the state whose step a crash interrupted (its
	// begin record is in the journal, its outcome is not), or "".
	Interrupted func(dir string) string
	// Outcome summarises the journal's outcome (for example its condition,
	// final state and completed steps); it must match the uninterrupted run.
	Outcome func(dir string) (string, error)
	// Ignore reports sandbox paths left out of the comparison (journals and
	// their lock files are compared through Outcome).
	Ignore func(rel string) bool
	// Mode is how the process is interrupted.
	Mode Mode
	// Recrash also kills the rerun of each crash that interrupted a step
	// at each of its own points until it has recovered (a second crash
	// during recovery), then reruns to completion.
	Recrash bool
}

// Summary is what Run measured.
type Summary struct {
	Points   []string // failpoint names of the uninterrupted run, in order
	Refused  []int    // crash points whose rerun refused (needs inspection)
	Resumed  []int    // crash points whose rerun completed
	Finished []int    // crash points the process passed without dying
	// Recrashes counts second crashes during recovery, all resumed or
	// refused as the first ones.
	Recrashes int
	// RecrashFrom counts the interrupted states the second crashes
	// started from.
	RecrashFrom int
	// Lost counts crash points whose power cut lost at least one path.
	Lost int
}

// harness is one Run.
type harness struct {
	t    *testing.T
	tgt  Target
	base string
	want treetest.Tree
	// wantOutcome is the uninterrupted run's outcome.
	wantOutcome string
	sum         Summary
	seen        map[string]bool // states second crashes started from
}

// Run executes the harness. It fails t on any divergence.
func Run(t *testing.T, tgt Target) Summary {
	t.Helper()
	if tgt.Mode == PowerCut {
		if err := powercut.Available(); err != nil {
			t.Skip(err)
		}
	}
	h := &harness{t: t, tgt: tgt, base: t.TempDir(), seen: map[string]bool{}}
	// A process running as another account reaches the sandboxes (each
	// its own owner's) and appends to the count files.
	os.Chmod(filepath.Dir(h.base), 0o755)
	os.Chmod(h.base, 0o755)

	sb := h.sandbox("uninterrupted")
	countFile := h.countFile("points")
	out, err := h.run(sb, CountTo(countFile))
	if err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	if h.sum.Points, err = readCount(countFile); err != nil {
		t.Fatal(err)
	}
	h.want = h.snapshot(sb)
	if h.wantOutcome, err = tgt.Outcome(sb.dir); err != nil {
		t.Fatal(err)
	}
	// A completed run must survive a power cut as it is.
	h.cut(sb, "after the uninterrupted run")
	h.check(sb, "uninterrupted run, then a power cut")
	sb.close(t)

	for n := 1; n <= len(h.sum.Points); n++ {
		h.point(n)
	}
	t.Logf("%s at %d failpoints: %d resumed to the same state, %d refused for inspection, %d passed; %d second crashes during recovery from %d interrupted states; %d crashes lost data",
		tgt.Mode, len(h.sum.Points), len(h.sum.Resumed), len(h.sum.Refused), len(h.sum.Finished), h.sum.Recrashes, h.sum.RecrashFrom, h.sum.Lost)
	return h.sum
}

// point crashes a fresh sandbox at point n and checks the rerun (and, with
// Recrash, every second crash of the rerun).
func (h *harness) point(n int) {
	t := h.t
	name := fmt.Sprintf("point %d (%s)", n, h.sum.Points[n-1])
	sb := h.sandbox(fmt.Sprintf("crash-%03d", n))
	defer sb.close(t)
	if h.crash(sb, name, n) {
		h.sum.Finished = append(h.sum.Finished, n)
	}
	if h.refusal(sb, name) {
		h.sum.Refused = append(h.sum.Refused, n)
		return
	}
	// A second crash is tried once per interrupted state (the first point
	// that leaves each step interrupted): a crash between steps leaves
	// nothing to recover, and trying every first point of the same step
	// again multiplies the runs (hours for prepare instead of minutes) for
	// the same recovery path.
	recrash := h.tgt.Recrash && h.tgt.Interrupted(sb.dir) != "" && h.firstSeen(sb)
	firstOutcome, _ := h.tgt.Outcome(sb.dir)
	var env []string
	countFile := h.countFile(fmt.Sprintf("points-%03d", n))
	if recrash {
		env = append(env, CountTo(countFile))
	}
	if out, err := h.run(sb, env...); err != nil {
		t.Fatalf("%s: rerun after the %s failed: %v\n%s", name, h.tgt.Mode, err, out)
	}
	h.check(sb, name)
	h.cut(sb, name+", after the rerun")
	h.check(sb, name+", rerun, then a power cut")
	h.sum.Resumed = append(h.sum.Resumed, n)
	if !recrash {
		return
	}
	// A rerun that passes no point leaves no count file.
	data, _ := os.ReadFile(countFile)
	for m := range strings.Fields(string(data)) {
		// The rerun has recovered once the journal durably shows
		// progress past the interrupted step; a crash after that is a
		// first crash of a later step, which the first pass covers.
		if h.recrash(n, m+1) != firstOutcome {
			break
		}
	}
}

// firstSeen reports whether no earlier crash point left the state
// interrupted that sb has interrupted.
func (h *harness) firstSeen(sb *sandbox) bool {
	key := h.tgt.Interrupted(sb.dir)
	if h.seen[key] {
		return false
	}
	h.seen[key] = true
	h.sum.RecrashFrom++
	return true
}

// recrash crashes a fresh sandbox at point n, its rerun at the rerun's
// point m, and checks the third run. It returns the outcome the second
// crash left.
func (h *harness) recrash(n, m int) string {
	t := h.t
	name := fmt.Sprintf("point %d (%s), then rerun point %d", n, h.sum.Points[n-1], m)
	sb := h.sandbox(fmt.Sprintf("crash-%03d-%03d", n, m))
	defer sb.close(t)
	h.crash(sb, name, n)
	h.crash(sb, name, m)
	h.sum.Recrashes++
	left, _ := h.tgt.Outcome(sb.dir)
	if h.refusal(sb, name) {
		return left
	}
	if out, err := h.run(sb); err != nil {
		t.Fatalf("%s: the run after two crashes failed: %v\n%s", name, err, out)
	}
	h.check(sb, name)
	h.cut(sb, name+", after the last run")
	h.check(sb, name+", last run, then a power cut")
	return left
}

// crash runs the process to its n-th point, where it dies, then cuts
// power. It reports whether the process finished before reaching it.
func (h *harness) crash(sb *sandbox, name string, n int) (finished bool) {
	out, err := h.run(sb, CrashAt(n))
	if err != nil && !killed(err) {
		h.t.Fatalf("%s: the crashing run failed instead of dying: %v\n%s", name, err, out)
	}
	if h.cut(sb, name) {
		h.sum.Lost++
	}
	return err == nil
}

// refusal reports whether the crash left an Inspect state interrupted; if
// so the rerun must refuse and change nothing.
func (h *harness) refusal(sb *sandbox, name string) bool {
	t := h.t
	state := h.tgt.Interrupted(sb.dir)
	if !slices.Contains(h.tgt.InspectStates, state) {
		return false
	}
	before := h.snapshot(sb)
	if out, err := h.run(sb); err == nil {
		t.Fatalf("%s: the rerun resumed the interrupted Inspect state %q\n%s", name, state, out)
	}
	if d := treetest.Diff(before, h.snapshot(sb)); d != "" {
		t.Fatalf("%s: the refusing rerun changed the sandbox:\n%s", name, d)
	}
	return true
}

// check compares the sandbox with the uninterrupted run.
func (h *harness) check(sb *sandbox, name string) {
	t := h.t
	if d := treetest.Diff(h.want, h.snapshot(sb)); d != "" {
		t.Fatalf("%s: final state differs from the uninterrupted run (was: uninterrupted, now: this run):\n%s", name, d)
	}
	got, err := h.tgt.Outcome(sb.dir)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if got != h.wantOutcome {
		t.Fatalf("%s: outcome %q, uninterrupted %q", name, got, h.wantOutcome)
	}
}

// sandbox is one directory the process runs in; in PowerCut mode it is the
// mountpoint of a power-cut file system over name.disk.
type sandbox struct {
	dir string
	pc  *powercut.FS
}

func (h *harness) sandbox(name string) *sandbox {
	t := h.t
	sb := &sandbox{dir: filepath.Join(h.base, name)}
	if err := os.Mkdir(sb.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if h.tgt.Mode == PowerCut {
		disk := sb.dir + ".disk"
		if err := os.Mkdir(disk, 0o700); err != nil {
			t.Fatal(err)
		}
		pc, err := powercut.Mount(disk, sb.dir)
		if err != nil {
			t.Fatal(err)
		}
		sb.pc = pc
		t.Cleanup(func() { sb.close(t) })
	}
	if h.tgt.Setup != nil {
		h.tgt.Setup(t, sb.dir)
	}
	if sb.pc != nil {
		if err := sb.pc.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return sb
}

// close unmounts the sandbox's file system, if any, and removes its files.
func (sb *sandbox) close(t *testing.T) {
	if sb.pc == nil {
		return
	}
	pc := sb.pc
	sb.pc = nil
	if err := pc.Unmount(); err != nil {
		t.Error(err)
	}
	os.RemoveAll(pc.Backing())
}

// cut cuts the sandbox's power (PowerCut mode only) and reports whether
// anything was lost.
func (h *harness) cut(sb *sandbox, name string) bool {
	if sb.pc == nil {
		return false
	}
	lost, err := sb.pc.PowerCut()
	if err != nil {
		h.t.Fatalf("%s: %v", name, err)
	}
	return len(lost) > 0
}

// countFile creates an empty count file that any account may append to.
func (h *harness) countFile(name string) string {
	p := filepath.Join(h.base, name)
	if err := os.WriteFile(p, nil, 0o666); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Chmod(p, 0o666); err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *harness) run(sb *sandbox, env ...string) ([]byte, error) {
	cmd := h.tgt.Command(sb.dir)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	clean := cmd.Env[:0:0]
	for _, e := range cmd.Env {
		if !strings.HasPrefix(e, EnvCrashAt+"=") && !strings.HasPrefix(e, EnvCrashCount+"=") {
			clean = append(clean, e)
		}
	}
	cmd.Env = append(clean, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

func killed(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// snapshot is the sandbox's entries below its top (treetest's
// descriptions: type, mode, size and content hash, link target), but for
// those the target ignores.
func (h *harness) snapshot(sb *sandbox) treetest.Tree {
	h.t.Helper()
	out := treetest.Snapshot(h.t, sb.dir, treetest.Options{})
	for rel := range out {
		if rel == "." || (h.tgt.Ignore != nil && h.tgt.Ignore(rel)) {
			delete(out, rel)
		}
	}
	return out
}
