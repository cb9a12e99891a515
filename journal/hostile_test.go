package journal

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestJournalRefusesAHugeFile: a huge sparse file where a journal is
// expected is refused as corrupt before it is read (reading it would take
// gigabytes of memory), by Open and Scan alike, and left as it is.
func TestJournalRefusesAHugeFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "huge.journal")
	writeJournal(t, p, testRecords(2))
	must(t, os.Truncate(p, 8<<30))
	if _, _, _, err := Open(p); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Open: %v", err)
	}
	if _, _, err := Scan(p); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Scan: %v", err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Size() != 8<<30 {
		t.Errorf("the file changed: %v %v", fi, err)
	}
}
