package console

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// WriteBundle lays the console's /node-install/ tree out: the active
// release at the top, another release in releases/<commit>/, 0755 and
// 0644 (the installer 0755), every byte what the payload holds; a declared artifact the payload
// lacks is reported, and an existing directory is never written into.
func TestWriteBundle(t *testing.T) {
	payload := filepath.Join(t.TempDir(), "payload")
	a, b := newFixture(t, commitA, ""), newFixture(t, commitB, "https://releases.example.com/v1")
	if err := Publish(payload, a.files); err != nil {
		t.Fatal(err)
	}
	if err := Publish(payload, b.without(release.PathRuntimeImage)); err != nil {
		t.Fatal(err)
	}
	if err := Activate(payload, commitA); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "bundle")
	res, err := WriteBundle(payload, dst, []string{commitA, commitB})
	if err != nil {
		t.Fatal(err)
	}
	if res.Current != commitA || !slices.Equal(res.Releases, []string{commitB}) ||
		!slices.Equal(res.Missing, []string{commitB + "/" + b.names[release.PathRuntimeImage]}) {
		t.Errorf("result %+v", res)
	}
	want := map[string][]byte{}
	for name, data := range a.files.Files {
		want[name] = data
	}
	for name, data := range a.content {
		want["artifacts/"+name] = data
	}
	for name, data := range b.files.Files {
		want["releases/"+commitB+"/"+name] = data
	}
	for name, data := range b.content {
		if name != b.names[release.PathRuntimeImage] {
			want["releases/"+commitB+"/artifacts/"+name] = data
		}
	}
	got := map[string][]byte{}
	filepath.Walk(dst, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		switch {
		case fi.IsDir():
			if fi.Mode().Perm() != 0o755 {
				t.Errorf("%s: mode %v", rel, fi.Mode())
			}
		case fi.Mode().IsRegular():
			want := os.FileMode(0o644)
			if filepath.Base(rel) == release.InstallerName {
				want = 0o755
			}
			if fi.Mode().Perm() != want {
				t.Errorf("%s: mode %v", rel, fi.Mode())
			}
			got[rel], _ = os.ReadFile(p)
		default:
			t.Errorf("%s: %v", rel, fi.Mode())
		}
		return nil
	})
	for name, data := range want {
		if !bytes.Equal(got[name], data) {
			t.Errorf("%s: %q, want %q", name, got[name], data)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected %s", name)
		}
	}
	if _, err := WriteBundle(payload, dst, nil); !errors.Is(err, os.ErrExist) {
		t.Errorf("into an existing directory: %v", err)
	}
}
