package treetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Each kind of change shows in the diff, and only the options that record
// it make a metadata-only change show.
func TestDiffSeesChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		o      Options
		change func(dir string)
		want   string
	}{
		{"nothing", Options{Times: true, Owner: true}, func(string) {}, ""},
		{"content", Options{}, func(d string) { os.WriteFile(filepath.Join(d, "f"), []byte("y"), 0o600) }, "f: was -rw------- 1 "},
		{"mode", Options{}, func(d string) { os.Chmod(filepath.Join(d, "f"), 0o644) }, "now -rw-r--r--"},
		{"new", Options{}, func(d string) { os.WriteFile(filepath.Join(d, "g"), nil, 0o600) }, "g: new, -rw-------"},
		{"gone", Options{}, func(d string) { os.Remove(filepath.Join(d, "f")) }, "f: was -rw------- 1 2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881, now gone"},
		{"link", Options{}, func(d string) { os.Remove(filepath.Join(d, "l")); os.Symlink("g", filepath.Join(d, "l")) }, "now Lrwxrwxrwx -> g"},
		{"same bytes, mtime", Options{MTime: true}, func(d string) {
			os.Chtimes(filepath.Join(d, "f"), time.Time{}, time.Unix(1, 0))
		}, "mtime 1.000000000"},
		{"same bytes, mtime unrecorded", Options{}, func(d string) {
			os.Chtimes(filepath.Join(d, "f"), time.Time{}, time.Unix(1, 0))
		}, ""},
		{"same bytes, replaced", Options{Times: true}, func(d string) {
			os.Rename(filepath.Join(d, "f"), filepath.Join(d, "h"))
			os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o600)
		}, "f: was -rw------- 1 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600)
			os.Symlink("f", filepath.Join(dir, "l"))
			before := Snapshot(t, dir, tc.o)
			tc.change(dir)
			d := Diff(before, Snapshot(t, dir, tc.o))
			if (tc.want == "") != (d == "") || !strings.Contains(d, tc.want) {
				t.Fatalf("diff %q, want one with %q", d, tc.want)
			}
		})
	}
}

func TestCopy(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	os.MkdirAll(filepath.Join(src, "a/b"), 0o750)
	os.WriteFile(filepath.Join(src, "a/b/f"), []byte("x"), 0o640)
	os.Symlink("b/f", filepath.Join(src, "a/l"))
	Copy(t, src, dst)
	if d := Diff(Snapshot(t, src, Options{}), Snapshot(t, dst, Options{})); d != "" {
		t.Fatalf("the copy differs:\n%s", d)
	}
}
