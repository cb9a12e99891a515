//go:build crashtest

package generation

import (
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// A Runtime file found already in place counts as present only after it
// and its directory are fsynced: the run that put it there may have died
// before its directory fsync, and a power loss would take back what this
// run records as done. A SIGKILL test cannot see an fsync; the safe-file
// layer's crashtest record can.
func TestPresentFilesAreMadeDurable(t *testing.T) {
	n, _, spec := preparedNode(t)
	file := n.path("releases", commitB, release.PathSeccomp)
	dir := filepath.Dir(file)
	f, d := safefile.SyncCount(file), safefile.SyncCount(dir)
	if err := n.run(noderoot.ActionRepair, 2, spec); err != nil {
		t.Fatalf("repair: %v\n%s", err, n.log)
	}
	if safefile.SyncCount(file) == f || safefile.SyncCount(dir) == d {
		t.Fatalf("repair accepted %s as present without fsync of the file (%d) and its directory (%d)",
			file, safefile.SyncCount(file)-f, safefile.SyncCount(dir)-d)
	}
}
