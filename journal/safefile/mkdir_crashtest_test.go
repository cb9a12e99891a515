//go:build crashtest

package safefile

import (
	"os"
	"path/filepath"
	"testing"
)

// MkdirAll makes every directory of the path durable: each new one and its
// parent, and those found in place too (an earlier run may have created
// them without syncing their parents).
func TestMkdirAllSyncsEveryComponent(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "a", "b")
	paths := []string{dir, filepath.Join(base, "a"), base, "/"}
	for _, run := range []string{"creates", "finds"} {
		got := syncDelta(func() { must(t, MkdirAll(dir, 0o700)) }, paths...)
		for i, n := range got {
			if n == 0 {
				t.Errorf("MkdirAll %s %s without fsync of %s", run, dir, paths[i])
			}
		}
	}
}

// Remove by path fsyncs the directory, also when the file is already gone.
func TestRemovePathSyncsDirectory(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	writeFile(t, p, "x", 0o600)
	for _, run := range []string{"removes", "finds gone"} {
		got := syncDelta(func() {
			if err := Remove(p); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}, dir)
		if got[0] != 1 {
			t.Errorf("Remove %s %s with %d fsyncs of its directory", run, p, got[0])
		}
	}
}

// Mkdir by path fsyncs the new directory and its parent.
func TestMkdirPathSyncsParent(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "d")
	for i, n := range syncDelta(func() { must(t, Mkdir(dir, 0o700)) }, dir, base) {
		if n == 0 {
			t.Errorf("Mkdir %s without fsync of %s", dir, []string{dir, base}[i])
		}
	}
}
