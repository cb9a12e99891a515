package journal

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// Receipts are pruned: after many runs of one installation only the
// newest KeepReceipts stay, numbered on from the newest, so that 50
// install and uninstall cycles do not leave a hundred files; the newest
// receipt always has the highest number.
func TestKeepAsidePrunesOldReceipts(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "install.journal")
	other := filepath.Join(dir, "uninstall.journal.3")
	if err := os.WriteFile(other, []byte("another journal's receipt"), 0o600); err != nil {
		t.Fatal(err)
	}
	const runs = KeepReceipts + 5
	for i := 1; i <= runs; i++ {
		if err := os.WriteFile(path, []byte(strconv.Itoa(i)), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := KeepAside(path); err != nil {
			t.Fatal(err)
		}
	}
	var kept []int
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if n, ok := receiptNumber("install.journal", e.Name()); ok {
			kept = append(kept, n)
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			if string(b) != strconv.Itoa(n) {
				t.Errorf("%s holds run %s", e.Name(), b)
			}
		}
	}
	slices.Sort(kept)
	if len(kept) != KeepReceipts || kept[len(kept)-1] != runs {
		t.Errorf("receipts kept %v, want the newest %d of %d", kept, KeepReceipts, runs)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another journal's receipt: %v", err)
	}
}
