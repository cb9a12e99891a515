//go:build crashtest

package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/openagentcore/oac-node-install/journal"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Root's journal disk fills at the lease step's begin or done record (the
// record written, its sync failing with ENOSPC, so it may stay): the run
// says to rerun, and the rerun, with space back, decides from the host
// whether the lease step ran: no lease is a step that never ran, and runs;
// a complete lease is a step that ran, and counts as done. Neither needs
// inspection.
func TestRerunAfterTheJournalDiskFilledAtTheLeaseStep(t *testing.T) {
	for _, record := range []workflow.RecordType{workflow.RecordBegin, workflow.RecordDone} {
		t.Run(string(record), func(t *testing.T) {
			t.Parallel()
			f := newRunFixture(t)
			path := JournalPath(f.host, generationtest.InstallationID)
			journal.FailAppends(path, func(payload []byte) error {
				var r workflow.Record
				if json.Unmarshal(payload, &r) == nil && r.Type == record && r.State == workflow.InstallLease {
					return syscall.ENOSPC
				}
				return nil
			})
			_, err := f.install(t, nil)
			journal.FailAppends(path, nil)
			if err == nil || !strings.Contains(err.Error(), "no space left on device") {
				t.Fatalf("first run: %v", err)
			}
			if msg := workflow.Message(err); !strings.Contains(strings.ToLower(msg), "rerun the same command") {
				t.Errorf("the failure does not say to rerun: %s", msg)
			}
			rep, err := workflow.InspectJournal(path, workflow.Lookup)
			if err != nil || rep.Condition == workflow.NeedsInspection {
				t.Errorf("the journal after the failure: %+v %v", rep, err)
			}
			rep, err = f.install(t, nil)
			if err != nil || rep.Condition != workflow.Complete {
				t.Fatalf("rerun: %v %v\n%s", rep, err, f.out.String())
			}
			node := layout.Node{Root: f.host.NodeRoot(generationtest.InstallationID)}
			if _, err := os.Lstat(node.Generations()); err != nil {
				t.Errorf("no lease: %v", err)
			}
			if n := f.registrations(); n != 1 {
				t.Errorf("%d registrations", n)
			}
		})
	}
}

// A run stopped in the lease step (its done record lost to a full journal
// disk) over a lease whose identity is gone is what only an operator may
// judge: the rerun refuses it, whatever the installer's version, naming
// the lease, and changes nothing.
func TestAHalfMadeLeaseIsRefused(t *testing.T) {
	for _, version := range []string{"test-1", "test-0"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			f := newRunFixture(t)
			path := JournalPath(f.host, generationtest.InstallationID)
			journal.FailAppends(path, func(payload []byte) error {
				var r workflow.Record
				if json.Unmarshal(payload, &r) == nil && r.Type == workflow.RecordDone && r.State == workflow.InstallLease {
					return syscall.ENOSPC
				}
				return nil
			})
			_, err := f.install(t, nil)
			journal.FailAppends(path, nil)
			if err == nil {
				t.Fatal("the first run did not fail")
			}
			node := layout.Node{Root: f.host.NodeRoot(generationtest.InstallationID)}
			if err := os.Remove(filepath.Join(node.Generations(), "1.lease-identity")); err != nil {
				t.Fatal(err)
			}
			f.version = version
			before := f.tree(t, false)
			calls, loads, regs := f.counters(t)
			_, err = f.install(t, nil)
			if err == nil || !strings.HasSuffix(workflow.Message(err), "Nothing was changed.") || !strings.Contains(err.Error(), "lease") ||
				!strings.Contains(err.Error(), "oac-node-install leases") {
				t.Fatalf("rerun: %v", err)
			}
			if d := generationtest.DiffHost(before, f.tree(t, false)); d != "" {
				t.Errorf("the refusal changed the host:\n%s", d)
			}
			if c, l, r := f.counters(t); c != calls || l != loads || r != regs {
				t.Errorf("the refusal called %v", f.changingCalls()[calls:])
			}
		})
	}
}
