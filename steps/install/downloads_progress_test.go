package install

import (
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// Each download of the install steps reports its progress by its name in
// the node root, growing to its size; a rerun that downloads nothing
// reports nothing.
func TestInstallDownloadsReportProgress(t *testing.T) {
	f := newInstallFixture(t)
	type seen struct {
		last, total int64
		calls       int
	}
	got := map[string]*seen{}
	f.progress = func(name string, done, total int64) {
		s := got[name]
		if s == nil {
			s = &seen{}
			got[name] = s
		}
		if done < s.last || done > total || (s.total != 0 && total != s.total) {
			t.Errorf("%s: %d of %d after %d of %d", name, done, total, s.last, s.total)
		}
		s.last, s.total = done, total
		s.calls++
	}
	if err := f.run("tok-123"); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{release.PathNode, release.PathRuntimeImage} {
		s := got[rel]
		if s == nil || s.last != s.total || s.total != f.rel.Manifest.Artifacts[rel].Size {
			t.Errorf("%s: progress %+v, want it to reach %d", rel, s, f.rel.Manifest.Artifacts[rel].Size)
		}
	}
	got = map[string]*seen{}
	if err := f.run(""); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("a rerun that downloads nothing reported %v", got)
	}
}
