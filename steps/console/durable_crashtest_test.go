//go:build crashtest

package console

import (
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// Publishing again over a release already in place succeeds only after
// every file found there is fsynced with its directory: the run that put
// it there may have died before its directory fsync. A SIGKILL test cannot
// see an fsync; the safe-file layer's crashtest record can.
func TestRepublishMakesPresentFilesDurable(t *testing.T) {
	payload := filepath.Join(t.TempDir(), "node-payload")
	fx := newFixture(t, commitA, "https://releases.example/oac/build-"+commitA)
	if err := Publish(payload, fx.files); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for name := range fx.content {
		paths = append(paths, filepath.Join(payload, relPath(commitA, "artifacts", name)))
	}
	for name := range fx.files.Files {
		paths = append(paths, filepath.Join(payload, relPath(commitA, name)))
	}
	before := map[string]int{}
	for _, p := range paths {
		before[p], before[filepath.Dir(p)] = safefile.SyncCount(p), safefile.SyncCount(filepath.Dir(p))
	}
	if err := Publish(payload, fx.files); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if safefile.SyncCount(p) == before[p] || safefile.SyncCount(filepath.Dir(p)) == before[filepath.Dir(p)] {
			t.Errorf("%s accepted as published without fsync of the file and its directory", p)
		}
	}
}

// A first publication makes the payload directory and every artifact it
// adds durable: the copy is fsynced under its staging name before it is
// committed and the artifacts directory after.
func TestPublishMakesAddedArtifactsDurable(t *testing.T) {
	payload := filepath.Join(t.TempDir(), "node-payload")
	fx := newFixture(t, commitA, "https://releases.example/oac/build-"+commitA)
	if len(fx.content) == 0 {
		t.Fatal("the fixture offers no artifact")
	}
	artDir := filepath.Join(payload, relPath(commitA, "artifacts"))
	// The payload directory is new: its name in its parent is fsynced too.
	before := map[string]int{artDir: safefile.SyncCount(artDir), filepath.Dir(payload): safefile.SyncCount(filepath.Dir(payload))}
	for name := range fx.content {
		p := filepath.Join(artDir, stagePrefix+name)
		before[p] = safefile.SyncCount(p)
	}
	if err := Publish(payload, fx.files); err != nil {
		t.Fatal(err)
	}
	for p, n := range before {
		if safefile.SyncCount(p) == n {
			t.Errorf("published without fsync of %s", p)
		}
	}
}
