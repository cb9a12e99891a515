//go:build crashtest

package crashharness

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// Target describes the process under test.
type Target struct {
	// Command returns the command that runs the workflow in sandbox dir.
	// The harness adds the crash variables to its environment.
	Command func(dir string) *exec.Cmd
	// Setup prepares a fresh sandbox before the first run (optional).
	Setup func(t *testing.T, dir string)
	// NeedsInspection reports whether the state a crash left must make the
	// rerun refuse (typically: the journal's condition is needs-inspection).
	NeedsInspection func(dir string) bool
	// Outcome summarises the journal's outcome (for example its condition,
	// final state and completed steps); it must match the uninterrupted run.
	Outcome func(dir string) (string, error)
	// Ignore reports sandbox paths left out of the comparison (journals and
	// their lock files are compared through Outcome).
	Ignore func(rel string) bool
}

// Summary is what Run measured.
type Summary struct {
	Points   []string // failpoint names of the uninterrupted run, in order
	Refused  []int    // crash points whose rerun refused (needs inspection)
	Resumed  []int    // crash points whose rerun completed
	Finished []int    // crash points the process passed without dying
}

// Run executes the harness. It fails t on any divergence.
func Run(t *testing.T, tgt Target) Summary {
	t.Helper()
	base := t.TempDir()
	var sum Summary

	dir0 := filepath.Join(base, "uninterrupted")
	countFile := filepath.Join(base, "points")
	mkSandbox(t, tgt, dir0)
	if out, err := run(tgt, dir0, "OAC_CRASH_COUNT="+countFile); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}
	data, err := os.ReadFile(countFile)
	if err != nil {
		t.Fatalf("no failpoints recorded (is the target built with -tags crashtest?): %v", err)
	}
	sum.Points = strings.Fields(string(data))
	want := snapshot(t, tgt, dir0)
	wantOutcome, err := tgt.Outcome(dir0)
	if err != nil {
		t.Fatal(err)
	}

	for n := 1; n <= len(sum.Points); n++ {
		point := sum.Points[n-1]
		dir := filepath.Join(base, fmt.Sprintf("crash-%03d", n))
		mkSandbox(t, tgt, dir)
		out, err := run(tgt, dir, fmt.Sprintf("OAC_CRASH_AT=%d", n))
		if err == nil {
			sum.Finished = append(sum.Finished, n)
		} else if !killed(err) {
			t.Fatalf("point %d (%s): the crashing run failed instead of dying: %v\n%s", n, point, err, out)
		}
		if tgt.NeedsInspection(dir) {
			before := snapshot(t, tgt, dir)
			out, err := run(tgt, dir)
			if err == nil {
				t.Fatalf("point %d (%s): the rerun resumed a state that needs inspection\n%s", n, point, out)
			}
			if after := snapshot(t, tgt, dir); !equal(before, after) {
				t.Fatalf("point %d (%s): the refusing rerun changed the sandbox:\n%s", n, point, diff(before, after))
			}
			sum.Refused = append(sum.Refused, n)
			continue
		}
		if out, err := run(tgt, dir); err != nil {
			t.Fatalf("point %d (%s): rerun after the crash failed: %v\n%s", n, point, err, out)
		}
		if got := snapshot(t, tgt, dir); !equal(want, got) {
			t.Fatalf("point %d (%s): final state differs from the uninterrupted run:\n%s", n, point, diff(want, got))
		}
		gotOutcome, err := tgt.Outcome(dir)
		if err != nil {
			t.Fatal(err)
		}
		if gotOutcome != wantOutcome {
			t.Fatalf("point %d (%s): outcome %q, uninterrupted %q", n, point, gotOutcome, wantOutcome)
		}
		sum.Resumed = append(sum.Resumed, n)
	}
	t.Logf("%d failpoints: %d resumed to the same state, %d refused for inspection, %d passed", len(sum.Points), len(sum.Resumed), len(sum.Refused), len(sum.Finished))
	return sum
}

func mkSandbox(t *testing.T, tgt Target, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if tgt.Setup != nil {
		tgt.Setup(t, dir)
	}
}

func run(tgt Target, dir string, env ...string) ([]byte, error) {
	cmd := tgt.Command(dir)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	clean := cmd.Env[:0:0]
	for _, e := range cmd.Env {
		if !strings.HasPrefix(e, "OAC_CRASH_AT=") && !strings.HasPrefix(e, "OAC_CRASH_COUNT=") {
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

// entry is one sandbox path: type, mode and content hash.
type entry string

func snapshot(t *testing.T, tgt Target, dir string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." || (tgt.Ignore != nil && tgt.Ignore(rel)) {
			return nil
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			out[rel] = entry(fmt.Sprintf("file %v %d %s", info.Mode().Perm(), len(data), hex.EncodeToString(sum[:8])))
		case info.IsDir():
			out[rel] = entry(fmt.Sprintf("dir %v", info.Mode().Perm()))
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = entry("symlink " + target)
		default:
			out[rel] = entry(fmt.Sprintf("other %v", info.Mode()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func equal(a, b map[string]entry) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func diff(want, got map[string]entry) string {
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	var names []string
	for k := range keys {
		if want[k] != got[k] {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "  %s: want %q, got %q\n", k, want[k], got[k])
	}
	return b.String()
}
