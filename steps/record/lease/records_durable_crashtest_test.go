//go:build crashtest

package lease

import (
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// A dropped marker found already in place is made durable (file and
// directory fsynced) before WriteDropped reports success: the run that
// linked it may have died before its directory fsync.
func TestWriteDroppedAlreadyThereIsDurable(t *testing.T) {
	dir := genDir(t)
	if err := WriteDropped(dir, testID(6), uid); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, droppedName(6))
	file, d := safefile.SyncCount(marker), safefile.SyncCount(dir)
	if err := WriteDropped(dir, testID(6), uid); err != nil {
		t.Fatal(err)
	}
	if safefile.SyncCount(marker) == file || safefile.SyncCount(dir) == d {
		t.Fatalf("the existing marker was accepted without fsync of the file (%d) and its directory (%d)",
			safefile.SyncCount(marker)-file, safefile.SyncCount(dir)-d)
	}
}
