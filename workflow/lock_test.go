package workflow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// A lock file renamed over the held one (what lets a second process lock
// a new inode and run too) is noticed before the next record: the run
// stops with ErrLockReplaced and writes nothing more.
func TestReplacedInstanceLockStopsTheRun(t *testing.T) {
	f := newFixture(t)
	f.steps["second"].during = func(context.Context) error {
		fresh := f.path + ".lock.new"
		if err := os.WriteFile(fresh, nil, 0o600); err != nil {
			return err
		}
		return os.Rename(fresh, f.path+".lock")
	}
	_, err := f.runner().Run(context.Background())
	if !errors.Is(err, safefile.ErrLockReplaced) {
		t.Fatalf("want ErrLockReplaced, got %v", err)
	}
	recs := journalRecords(t, f.path)
	if last := recs[len(recs)-1]; len(recs) != 4 || last.Type != RecordBegin || last.Step != "second" {
		t.Fatalf("%d records, the last %+v; want nothing after second's begin", len(recs), last)
	}
	if f.steps["third"].runs != 0 || f.steps["fourth"].runs != 0 {
		t.Error("steps ran after the lock was replaced")
	}
}

// TestLockChild is a process of TestInstanceLockHeldForWholeRun; it runs
// only when that test starts it. As "holder" its second step says so (a
// file) and waits until it is let go (another file); as "racer" every step
// succeeds at once. It exits 0 on success, 4 on ErrLocked, 3 otherwise.
func TestLockChild(t *testing.T) {
	dir, role := os.Getenv("OAC_LOCK_CHILD_DIR"), os.Getenv("OAC_LOCK_CHILD_ROLE")
	if dir == "" {
		t.Skip("runs only as a process of TestInstanceLockHeldForWholeRun")
	}
	f := &fixture{steps: map[string]*fakeStep{}, path: filepath.Join(dir, "test.journal")}
	for _, n := range []string{"first", "second", "third", "fourth"} {
		f.steps[n] = &fakeStep{res: Result{Facts: map[string]string{n: role}}, outcome: NotDone}
	}
	if role == "holder" {
		f.steps["second"].during = func(context.Context) error {
			if err := os.WriteFile(filepath.Join(dir, "holding"), nil, 0o600); err != nil {
				return err
			}
			for !exists(filepath.Join(dir, "release")) {
				time.Sleep(5 * time.Millisecond)
			}
			return nil
		}
	}
	_, err := f.runner().Run(context.Background())
	switch {
	case err == nil:
		os.Exit(0)
	case errors.Is(err, ErrLocked):
		os.Exit(4)
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(3)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Two processes race for one instance: while the first is inside a step,
// the second must find the instance locked and change nothing; the lock
// is held for the whole run, not only while the journal is opened.
func TestInstanceLockHeldForWholeRun(t *testing.T) {
	dir := t.TempDir()
	child := func(role string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLockChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "OAC_LOCK_CHILD_DIR="+dir, "OAC_LOCK_CHILD_ROLE="+role)
		cmd.Stderr = os.Stderr
		return cmd
	}
	holder := child("holder")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- holder.Wait() }()
	t.Cleanup(func() {
		os.WriteFile(filepath.Join(dir, "release"), nil, 0o600)
		holder.Process.Kill()
		<-exited
	})
	for !exists(filepath.Join(dir, "holding")) {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the holder ended before its second step: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	before, err := os.ReadFile(filepath.Join(dir, "test.journal"))
	if err != nil {
		t.Fatal(err)
	}
	racer := child("racer")
	err = racer.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Fatalf("the second process: %v, want exit 4 (ErrLocked)", err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "test.journal")); !bytes.Equal(before, after) {
		t.Fatal("the second process wrote to the journal")
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("the holder: %v", err)
	}
	exited <- nil
	rep, err := InspectJournal(filepath.Join(dir, "test.journal"), lookupTest)
	if err != nil || rep.Condition != Complete {
		t.Fatalf("status: %v %+v", err, rep)
	}
	for step, n := range rep.Attempts {
		if n != 1 {
			t.Errorf("step %s began %d times", step, n)
		}
	}
}
