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
)

// childOfUs returns the pid of a process of uid whose parent is this
// process, waiting up to 20 s for one to appear.
func childOfUs(t *testing.T, uid int) int {
	t.Helper()
	want := fmt.Sprintf("PPid:\t%d\n", os.Getpid())
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		procs, _ := filepath.Glob("/proc/[0-9]*/status")
		for _, p := range procs {
			data, err := os.ReadFile(p)
			if err != nil || !bytes.Contains(data, []byte(want)) || !bytes.Contains(data, []byte(fmt.Sprintf("Uid:\t%d\t", uid))) {
				continue
			}
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return pid
		}
	}
	t.Fatal("no service-account child appeared")
	return 0
}

// An account that stops status's service-account child (SIGSTOP) cannot
// hang status: the inspection's deadline ends it, and status says why.
func TestStatusEndsWhenTheAccountStopsItsChild(t *testing.T) {
	h := newStatusHost(t)
	old := inspectTimeout
	inspectTimeout = 2 * time.Second
	t.Cleanup(func() { inspectTimeout = old })
	// Core does not answer until the child is stopped: it is then in
	// flight.
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
	go func() {
		code, out, errOut := runOn(t, h.root, "status")
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
		if r.code != exitFailure || !strings.Contains(r.errOut, "did not finish within 2s") {
			t.Fatalf("status: exit %d\n%s%s", r.code, r.out, r.errOut)
		}
	case <-time.After(60 * time.Second):
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatal("status hangs on a stopped child")
	}
}
