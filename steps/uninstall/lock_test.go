package uninstall

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/workflow"
)

// syncWriter is an output a run in another goroutine writes while the test
// reads it.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// While another command holds the host lock, an uninstall says that it
// waits, and neither asks Core nor reads the node's state (no
// service-account child) until it holds the lock: Core's answer is taken,
// and acted on, under the lock (CONTRACT §10).
func TestUninstallWaitsForTheHostLockBeforeItAsksCore(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	lock, err := safefile.TryLock(f.host.HostLock(), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	out := &syncWriter{}
	c := f.command(false)
	c.Out = out
	done := make(chan error, 1)
	var rep *workflow.Report
	go func() {
		var err error
		rep, err = Run(context.Background(), c)
		done <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "Wait for another node installation or uninstallation"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the uninstall did not say that it waits for the host lock: %q", out.String())
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := f.children.Load(); n != 0 {
		t.Errorf("the waiting uninstall ran %d service-account children (Core's check among them)", n)
	}
	lock.Unlock()
	if err := <-done; err != nil {
		t.Fatalf("uninstall after the lock was released: %v\n%s", err, out.String())
	}
	if rep.Condition != workflow.Complete || f.children.Load() == 0 {
		t.Fatalf("uninstall: %s, %d children", rep.Condition, f.children.Load())
	}
}
