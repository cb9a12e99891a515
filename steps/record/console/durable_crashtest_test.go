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
	for _, p := range paths[:len(paths):len(paths)] {
		paths = append(paths, filepath.Dir(p))
	}
	w := safefile.WatchSyncs(paths...)
	if err := Publish(payload, fx.files); err != nil {
		t.Fatal(err)
	}
	for _, p := range w.Unsynced() {
		t.Errorf("%s accepted as published without fsync", p)
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
	paths := []string{artDir, filepath.Dir(payload)}
	for name := range fx.content {
		paths = append(paths, filepath.Join(artDir, stagePrefix+name))
	}
	w := safefile.WatchSyncs(paths...)
	if err := Publish(payload, fx.files); err != nil {
		t.Fatal(err)
	}
	for _, p := range w.Unsynced() {
		t.Errorf("published without fsync of %s", p)
	}
}
