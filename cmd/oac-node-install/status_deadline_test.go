package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// childOfUs returns the pid of a process of uid whose parent is this
// process and still running (not a zombie), waiting up to 20 s for one to
// appear.
func childOfUs(t *testing.T, uid int) int {
	t.Helper()
	want := fmt.Sprintf("PPid:\t%d\n", os.Getpid())
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		procs, _ := filepath.Glob("/proc/[0-9]*/status")
		for _, p := range procs {
			data, err := os.ReadFile(p)
			if err != nil || !bytes.Contains(data, []byte(want)) || !bytes.Contains(data, []byte(fmt.Sprintf("Uid:\t%d\t", uid))) ||
				bytes.Contains(data, []byte("State:\tZ")) {
				continue
			}
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return pid
		}
	}
	t.Fatal("no service-account child appeared")
	return 0
}

// An account that stops the service-account child of status or leases
// (SIGSTOP) cannot hang them: with the default deadline they answer within
// 10 s, showing the node root as not read and why, and exit 2 (needs
// attention); the child is gone.
func TestStatusEndsWhenTheAccountStopsItsChild(t *testing.T) {
	for _, args := range [][]string{{"status"}, {"leases"}, {"status", "--json"}, {"leases", "--json"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			h := newStatusHost(t)
			if args[0] == "leases" {
				// leases asks Core nothing: generations enough that its
				// child is still reading them when it is stopped.
				slowLeases(t, h.node)
			}
			// Core does not answer until the child is stopped: it is
			// then in flight.
			h.core.mu.Lock()
			held := true
			defer func() {
				if held {
					h.core.mu.Unlock()
				}
			}()
			type result struct {
				code        int
				out, errOut string
			}
			done := make(chan result, 1)
			start := time.Now()
			go func() {
				code, out, errOut := runOn(t, h.root, args...)
				done <- result{code, out, errOut}
			}()
			pid := childOfUs(t, 65534)
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			h.core.mu.Unlock()
			held = false
			select {
			case r := <-done:
				took := time.Since(start)
				t.Logf("%s with a stopped child: exit %d after %v", strings.Join(args, " "), r.code, took.Round(time.Millisecond))
				if took > 10*time.Second {
					t.Errorf("answered after %v, want within 10s", took)
				}
				if r.code != exitAttention || !strings.Contains(r.out, "did not finish within 8s") ||
					!strings.Contains(r.out, "the node root is not read") || !strings.Contains(r.out, h.node.Root) {
					t.Fatalf("exit %d, want %d showing the node root %s not read:\n%s%s", r.code, exitAttention, h.node.Root, r.out, r.errOut)
				}
				if err := syscall.Kill(pid, 0); err == nil {
					t.Errorf("the stopped child %d is still there", pid)
				}
			case <-time.After(60 * time.Second):
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatal("the command hangs on a stopped child")
			}
		})
	}
}

// slowLeases gives the node root 3,000 generations of the service account's
// records, so that reading them takes the child a while.
func slowLeases(t *testing.T, n layout.Node) {
	t.Helper()
	dir := n.Generations()
	must(t, os.MkdirAll(dir, 0o700))
	must(t, os.Chown(dir, 65534, 65534))
	for g := 1; g <= 3000; g++ {
		p := filepath.Join(dir, strconv.Itoa(g)+".preparing")
		must(t, os.WriteFile(p, []byte("{}\n"), 0o600))
		must(t, os.Chown(p, 65534, 65534))
	}
}
