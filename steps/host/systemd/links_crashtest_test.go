//go:build crashtest

package systemd

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// systemd makes and removes enable's links without fsync: Enable and
// Disable fsync the directory of every link they changed and its parent,
// and, for a unit an earlier run enabled or disabled (no changes reported),
// the link directories all the same; Enable also fsyncs the unit file the
// links point to.
func TestEnableDisableSyncTheLinks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	unitFile := filepath.Join(dir, linkedUnit)
	if err := os.WriteFile(unitFile, []byte("[Install]\nWantedBy=multi-user.target\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := fakeUnitFiles{dir: dir}
	d := &DBus{files: files, unitDir: dir}
	wants := filepath.Dir(files.link(linkedUnit))
	for _, tc := range []struct {
		name  string
		call  func(context.Context, string) error
		paths []string
	}{
		{"enable creates the link", d.Enable, []string{wants, dir, unitFile}},
		{"enable finds it enabled", d.Enable, []string{wants, dir, unitFile}},
		{"disable removes the link", d.Disable, []string{wants}},
		{"disable finds it disabled", d.Disable, []string{wants}},
	} {
		before := make([]int, len(tc.paths))
		for i, p := range tc.paths {
			before[i] = safefile.SyncCount(p)
		}
		if err := tc.call(ctx, linkedUnit); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i, p := range tc.paths {
			if safefile.SyncCount(p) == before[i] {
				t.Errorf("%s: no fsync of %s", tc.name, p)
			}
		}
	}
	if _, err := os.Lstat(files.link(linkedUnit)); !os.IsNotExist(err) {
		t.Fatalf("the link after disable: %v", err)
	}
}

// A link systemd reports in a directory of its own choosing (here one the
// scan of *.wants and *.requires does not cover) is made durable from the
// reported change: its directory and that directory's parent.
func TestEnableSyncsTheReportedLinks(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	dir := filepath.Join(base, "system")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, linkedUnit), []byte("[Install]\nUpheldBy=oac.target\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := fakeUnitFiles{dir: dir, sub: "../other/oac.target.upholds"}
	d := &DBus{files: files, unitDir: dir}
	linkDir := filepath.Dir(files.link(linkedUnit))
	paths := []string{linkDir, filepath.Dir(linkDir)}
	for _, tc := range []struct {
		name string
		call func(context.Context, string) error
	}{{"enable", d.Enable}, {"disable", d.Disable}} {
		before := []int{safefile.SyncCount(paths[0]), safefile.SyncCount(paths[1])}
		if err := tc.call(ctx, linkedUnit); err != nil {
			t.Fatal(err)
		}
		for i, p := range paths {
			if safefile.SyncCount(p) == before[i] {
				t.Errorf("%s changed a link in %s without fsync of %s", tc.name, linkDir, p)
			}
		}
	}
}
