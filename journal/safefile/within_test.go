package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRemoveAllNeverFollowsALink: a link for a parent of rel is removed
// itself; links inside the tree are unlinked, not entered; the targets
// stay as they are.
func TestRemoveAllNeverFollowsALink(t *testing.T) {
	base, target := t.TempDir(), t.TempDir()
	secret := filepath.Join(target, "secret")
	if err := os.MkdirAll(filepath.Join(target, "nodes", "n"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(secret, []byte("x"), 0o600)
	os.WriteFile(filepath.Join(target, "nodes", "n", "f"), []byte("x"), 0o600)
	os.MkdirAll(filepath.Join(base, "a", "n", "d"), 0o700)
	os.Symlink(target, filepath.Join(base, "a", "n", "d", "dirlink"))
	os.Symlink(secret, filepath.Join(base, "a", "n", "filelink"))
	os.Link(secret, filepath.Join(base, "a", "n", "hard"))
	unix.Mkfifo(filepath.Join(base, "a", "n", "fifo"), 0o600)
	os.Symlink(target, filepath.Join(base, "b"))

	r, err := OpenRoot(base)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, rel := range []string{"a/n", "b/nodes/n", "missing/n", "a/n"} {
		if err := r.RemoveAll(rel); err != nil {
			t.Fatalf("RemoveAll(%s): %v", rel, err)
		}
	}
	for _, p := range []string{"a/n", "b"} {
		if _, err := os.Lstat(filepath.Join(base, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s remains: %v", p, err)
		}
	}
	for _, p := range []string{secret, filepath.Join(target, "nodes", "n", "f")} {
		if data, err := os.ReadFile(p); err != nil || string(data) != "x" {
			t.Errorf("the target %s changed: %q %v", p, data, err)
		}
	}
	if err := r.RemoveAll("../x"); !errors.Is(err, ErrEscapes) {
		t.Errorf("RemoveAll(../x): %v", err)
	}
}

func TestOpenRootInRefusesALinkInThePath(t *testing.T) {
	base, target := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(target, "nodes", "n"), 0o700)
	os.Symlink(target, filepath.Join(base, "oac"))
	if _, err := OpenRootIn(base, "oac/nodes/n", Expect{UID: AnyUID}); !errors.Is(err, ErrSymlink) {
		t.Errorf("through a link: %v", err)
	}
	os.MkdirAll(filepath.Join(base, "real", "n"), 0o700)
	r, err := OpenRootIn(base, "real/n", Expect{UID: os.Getuid()})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}
