package uninstall

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// TestARefusedUninstallLeavesInstallerDBAsItWas: an uninstallation that
// kept the account for a rerun leaves installer.db; its rerun without
// --force is refused ("Nothing was changed.") and reads installer.db
// without writing it: its bytes are the same after as before.
func TestARefusedUninstallLeavesInstallerDBAsItWas(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	f.running = true
	if _, err := f.uninstall(t, false); err != nil {
		t.Fatalf("%v\n%s", err, f.out.String())
	}
	f.user(t)
	before, err := os.ReadFile(f.host.Bookkeeping())
	must(t, err)
	_, refused := f.uninstall(t, false)
	if refused == nil || !strings.HasSuffix(workflow.Message(refused), workflow.NothingWasChanged) {
		t.Fatalf("the rerun without --force: %v, want a refusal", refused)
	}
	after, err := os.ReadFile(f.host.Bookkeeping())
	must(t, err)
	if !bytes.Equal(before, after) {
		t.Errorf("the refused uninstall (%v) changed the bytes of %s", refused, f.host.Bookkeeping())
	}
	if _, err := f.dbs.LookupUser(layout.Account); err != nil {
		t.Errorf("the refused uninstall changed the account: %v", err)
	}
}
