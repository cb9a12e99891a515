package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestMkdirAll(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	base := t.TempDir()
	dir := filepath.Join(base, "var/lib/oac-node-install/id")
	must(t, MkdirAll(dir, 0o755))
	for p := dir; p != base; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
			t.Fatalf("%s: %v, %v", p, fi, err)
		}
	}
	// Found in place: success, and the mode of an existing directory is
	// left as it is.
	must(t, os.Chmod(dir, 0o700))
	must(t, MkdirAll(dir, 0o755))
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Fatalf("existing directory's mode changed to %v", fi.Mode())
	}

	writeFile(t, filepath.Join(base, "file"), "x", 0o600)
	if err := MkdirAll(filepath.Join(base, "file", "sub"), 0o700); !errors.Is(err, unix.ENOTDIR) {
		t.Fatalf("a file in the path: %v", err)
	}
	if err := MkdirAll("relative/dir", 0o700); err == nil {
		t.Fatal("a relative path must be refused")
	}
}

func TestRemovePath(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "unit.service")
	writeFile(t, p, "x", 0o644)
	must(t, os.Symlink(p, filepath.Join(dir, "link")))
	must(t, Remove(filepath.Join(dir, "link")))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the link's target went too: %v", err)
	}
	must(t, Remove(p))
	if err := Remove(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("already gone: %v", err)
	}
	if err := Remove(filepath.Join(dir, "gone", "f")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory gone: %v", err)
	}
}

// TestRemoveWritten: the file and the temporary file of an AtomicWrite of
// it that was interrupted before its rename both go; a link is removed,
// never followed; names already gone are no error.
func TestRemoveWritten(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "node.json")
	must(t, AtomicWrite(p, []byte("{}"), 0o644))
	target := filepath.Join(dir, "target")
	writeFile(t, target, "keep", 0o644)
	tmp := filepath.Join(dir, tempName("", "node.json"))
	must(t, os.Symlink(target, tmp))
	must(t, RemoveWritten(p))
	for _, gone := range []string{p, tmp} {
		if _, err := os.Lstat(gone); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there: %v", gone, err)
		}
	}
	if data, err := os.ReadFile(target); err != nil || string(data) != "keep" {
		t.Errorf("the temporary link's target: %q %v", data, err)
	}
	must(t, RemoveWritten(p))
	if err := RemoveWritten(filepath.Join(dir, "gone", "f")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("directory gone: %v", err)
	}
}

func TestMkdirPath(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	dir := filepath.Join(t.TempDir(), "payload")
	must(t, Mkdir(dir, 0o750))
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
		t.Fatalf("%s: %v, %v", dir, fi, err)
	}
	if err := Mkdir(dir, 0o700); !errors.Is(err, os.ErrExist) {
		t.Fatalf("existing directory: %v", err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o750 {
		t.Fatalf("existing directory's mode changed to %v", fi.Mode())
	}
	if err := Mkdir(filepath.Join(dir, "missing", "sub"), 0o700); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing parent: %v", err)
	}
}
