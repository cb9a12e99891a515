//go:build crashtest

package bookkeeping

import (
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// bbolt fsyncs the database file only: Open fsyncs the directory of a new
// database (a power cut after the account step must not take installer.db
// and its "created the account" record back), and of one found in place.
func TestOpenSyncsTheDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "installer.db")
	for _, run := range []string{"creates", "finds"} {
		before := safefile.SyncCount(dir)
		db, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		if safefile.SyncCount(dir) == before {
			t.Errorf("Open %s %s without fsync of %s", run, path, dir)
		}
	}
}
