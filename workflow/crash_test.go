//go:build crashtest

package workflow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/workflow/crashharness"
)

// crashDef has one step of each policy, each writing files.
func crashDef() *Definition {
	return &Definition{
		Name:  "crash",
		Final: "finished",
		States: []StateDef{
			{Name: "write", Policy: Rerun, On: []Transition{{"written", "count"}}},
			{Name: "count", Policy: Verify, On: []Transition{{"counted", "lease"}}},
			{Name: "lease", Policy: Inspect, On: []Transition{{"leased", "final"}}},
			{Name: "final", Policy: Rerun, On: []Transition{{"done", "finished"}}},
		},
	}
}

// appendOnce is a Verify step whose effect must never repeat: it appends a
// line to a log. Its Verify reads the log.
type appendOnce struct{ path string }

func (s appendOnce) Run(context.Context, Facts) (Result, error) {
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	if _, err := f.WriteString("counted\n"); err != nil {
		return Result{}, err
	}
	safefile.Failpoint("count-before-sync")
	if err := f.Sync(); err != nil {
		return Result{}, err
	}
	// The log's name is durable only once its directory is synced.
	return Result{Facts: map[string]string{"count": "1"}}, safefile.SyncDir(filepath.Dir(s.path))
}

func (s appendOnce) Verify(context.Context, Facts) (Outcome, Result, error) {
	data, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, os.ErrNotExist) || len(data) == 0:
		return NotDone, Result{}, nil
	case err != nil:
		return Unknown, Result{}, err
	case string(data) == "counted\n":
		return Done, Result{Facts: map[string]string{"count": "1"}}, nil
	}
	return Unknown, Result{}, nil
}

func crashSteps(dir string) map[State]Step {
	return map[State]Step{
		"write": StepFunc(func(context.Context, Facts) (Result, error) {
			return Result{}, safefile.AtomicWrite(filepath.Join(dir, "a.txt"), []byte("alpha\n"), 0o644)
		}),
		"count": appendOnce{filepath.Join(dir, "b.log")},
		"lease": StepFunc(func(context.Context, Facts) (Result, error) {
			f, err := os.OpenFile(filepath.Join(dir, "c.lease"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return Result{}, err
			}
			defer f.Close()
			if err := f.Sync(); err != nil {
				return Result{}, err
			}
			safefile.Failpoint("lease-created")
			return Result{}, safefile.AtomicWrite(filepath.Join(dir, "c.lease-identity"), []byte(`{"generation":1}`), 0o600)
		}),
		"final": StepFunc(func(_ context.Context, f Facts) (Result, error) {
			return Result{}, safefile.AtomicWrite(filepath.Join(dir, "d.txt"), []byte("count="+f["count"]+"\n"), 0o640)
		}),
	}
}

// crashJournal is the journal's path: in a directory of its own, so that
// no other file's directory fsync makes its name durable by chance.
func crashJournal(dir string) string { return filepath.Join(dir, "journals", "crash.journal") }

func lookupCrash(name string) (*Definition, bool) { return crashDef(), name == "crash" }

// TestCrashChild is the process the harness kills; it runs only when the
// harness starts it.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("OAC_CRASH_CHILD_DIR")
	if dir == "" {
		t.Skip("runs only as the crash harness's child process")
	}
	r := &Runner{Def: crashDef(), Steps: crashSteps(dir), Journal: crashJournal(dir), Binding: Binding{Version: "test", InstallationID: "crash"}}
	if _, err := r.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
}

// crashTarget is the test workflow under the crash harness; its one
// Inspect state is lease.
func crashTarget(mode crashharness.Mode) crashharness.Target {
	inspect := func(dir string) (*Report, error) {
		return InspectJournal(crashJournal(dir), lookupCrash)
	}
	return crashharness.Target{
		Command: func(dir string) *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "OAC_CRASH_CHILD_DIR="+dir)
			return cmd
		},
		InspectStates: []string{"lease"},
		Interrupted: func(dir string) string {
			rep, err := inspect(dir)
			if err != nil || rep.Pending == nil {
				return ""
			}
			return string(rep.Pending.State)
		},
		Outcome: func(dir string) (string, error) {
			rep, err := inspect(dir)
			if err != nil {
				return "", err
			}
			var steps []string
			for _, c := range rep.Completed {
				steps = append(steps, c.Step)
			}
			return fmt.Sprintf("%s %s %s", rep.Condition, rep.State, strings.Join(steps, ",")), nil
		},
		// The journals' directory exists before the run, as a node's does.
		Setup: func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, "journals"), 0o700); err != nil {
				t.Fatal(err)
			}
		},
		Ignore: func(rel string) bool { return strings.HasPrefix(rel, "journals/") },
		Mode:   mode,
	}
}

func TestCrashAtEveryJournalPoint(t *testing.T) {
	checkCrashSummary(t, crashharness.Run(t, crashTarget(crashharness.Kill)))
}

// TestPowerCutAtEveryJournalPoint cuts power at every point: whatever the
// steps and the journal did not make durable is lost before the rerun. (The
// second crash during recovery runs on prepare, in steps/generation; here
// it would add two minutes for the same engine code.)
func TestPowerCutAtEveryJournalPoint(t *testing.T) {
	sum := crashharness.Run(t, crashTarget(crashharness.PowerCut))
	checkCrashSummary(t, sum)
	if sum.Lost == 0 {
		t.Error("no power cut lost anything: the file system is not in the way")
	}
}

func checkCrashSummary(t *testing.T, sum crashharness.Summary) {
	t.Helper()
	if len(sum.Resumed) == 0 {
		t.Error("no crash point resumed")
	}
	for _, n := range sum.Refused {
		if sum.Points[n-1] == "lease-created" {
			return
		}
	}
	t.Error("the crash inside the lease step did not refuse")
}
