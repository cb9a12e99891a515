//go:build crashtest

package imagetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// A written fixture is durable before it is reported: each file is
// fsynced under its pending name before the rename and the directory
// after it. A SIGKILL test cannot see an fsync; the safe-file layer's
// crashtest record can.
func TestWriteFixtureIsDurable(t *testing.T) {
	dir := t.TempDir()
	w := safefile.WatchSyncs(filepath.Join(dir, ".runtime.tar.tmp-fixture"), filepath.Join(dir, ".runtime.tar.gz.tmp-fixture"), dir)
	if _, err := WriteFixture(dir, Options{Label: "durable"}); err != nil {
		t.Fatal(err)
	}
	if u := w.Unsynced(); len(u) > 0 {
		t.Errorf("fixture written without fsync of %v", u)
	}
	if got, _ := os.ReadDir(dir); len(got) != 2 {
		t.Fatalf("fixture directory holds %v", got)
	}
}
