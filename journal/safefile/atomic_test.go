package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile/safefiletest"
)

func TestAtomicWrite(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "provider.json")
	for _, tt := range []struct {
		data string
		perm os.FileMode
	}{
		{"first\n", 0o644},
		{"second, longer\n", 0o600},
		{"", 0o640},
	} {
		must(t, AtomicWrite(path, []byte(tt.data), tt.perm))
		got, err := os.ReadFile(path)
		if err != nil || string(got) != tt.data {
			t.Fatalf("read %q, %v", got, err)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != tt.perm {
			t.Fatalf("mode %v, want %v", fi.Mode(), tt.perm)
		}
	}
	assertNoTemp(t, dir)

	// A temporary file an interrupted run left is replaced and gone after.
	writeFile(t, filepath.Join(dir, ".provider.json.tmp"), "stale", 0o600)
	must(t, AtomicWrite(path, []byte("third"), 0o600))
	assertNoTemp(t, dir)
}

func TestAtomicWriteFailureLeavesNoTemp(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) string
	}{
		{"rename onto a directory", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "target")
			must(t, os.Mkdir(p, 0o700))
			writeFile(t, filepath.Join(p, "keep"), "", 0o600)
			return p
		}},
		{"missing directory", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "missing", "target")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tt.setup(t, dir)
			if err := AtomicWrite(path, []byte("x"), 0o600); err == nil {
				t.Fatal("write succeeded")
			}
			assertNoTemp(t, dir)
			if d := filepath.Dir(path); d != dir {
				if _, err := os.Stat(d); err == nil {
					assertNoTemp(t, d)
				}
			}
		})
	}
}

// TestAtomicWriteNobodyChild is the unprivileged process of
// TestAtomicWriteUnwritableDirectory.
func TestAtomicWriteNobodyChild(t *testing.T) {
	safefiletest.UnwritableChild(t, "OAC_SAFEFILE_NOBODY_PATH", writeX)
}

// A write into a directory the process may not write fails and leaves no
// temporary file, as root too (the write then runs as nobody).
func TestAtomicWriteUnwritableDirectory(t *testing.T) {
	safefiletest.Unwritable(t, "TestAtomicWriteNobodyChild", "OAC_SAFEFILE_NOBODY_PATH", writeX)
}

func writeX(path string) error { return AtomicWrite(path, []byte("x"), 0o600) }

func TestPublishOnce(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	dir := t.TempDir()
	path := filepath.Join(dir, "registered.json")
	data := []byte("{\n  \"generation\": 1\n}\n")

	must(t, PublishOnce(path, data, 0o644))
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode())
	}
	var before unix.Stat_t
	must(t, unix.Stat(path, &before))
	must(t, PublishOnce(path, data, 0o644))

	err := PublishOnce(path, []byte("{}\n"), 0o644)
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) || ce.Path != path {
		t.Fatalf("different bytes: got %v", err)
	}
	var after unix.Stat_t
	must(t, unix.Stat(path, &after))
	if got, _ := os.ReadFile(path); string(got) != string(data) || after.Ino != before.Ino {
		t.Fatal("write-once file was replaced")
	}
	assertNoTemp(t, dir)
}

func TestPublishOnceRefusesUnsafeTargets(t *testing.T) {
	data := []byte("x")
	tests := []struct {
		name  string
		setup func(t *testing.T, dir, path string)
	}{
		{"symlink to equal bytes", func(t *testing.T, dir, path string) {
			writeFile(t, filepath.Join(dir, "real"), "x", 0o600)
			must(t, os.Symlink("real", path))
		}},
		{"dangling symlink", func(t *testing.T, dir, path string) {
			must(t, os.Symlink("nowhere", path))
		}},
		{"fifo", func(t *testing.T, dir, path string) {
			must(t, unix.Mkfifo(path, 0o600))
		}},
		{"directory", func(t *testing.T, dir, path string) {
			must(t, os.Mkdir(path, 0o700))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "3.json")
			tt.setup(t, dir, path)
			done := make(chan error, 1)
			go func() { done <- PublishOnce(path, data, 0o600) }()
			select {
			case err := <-done:
				if err == nil || errors.Is(err, ErrConflict) {
					t.Fatalf("got %v, want a refusal", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("PublishOnce blocked")
			}
			if _, err := os.Stat(filepath.Join(dir, "nowhere")); !errors.Is(err, os.ErrNotExist) {
				t.Fatal("written through a symlink")
			}
			assertNoTemp(t, dir)
		})
	}
}

func TestSyncDir(t *testing.T) {
	must(t, SyncDir(t.TempDir()))
	if err := SyncDir(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v", err)
	}
}

// PublishOnceSame leaves an existing file that same accepts as it is (a
// record in another layout) and refuses one it does not, reading at most
// max bytes.
func TestPublishOnceSame(t *testing.T) {
	dir := t.TempDir()
	r, err := OpenRoot(dir)
	must(t, err)
	defer r.Close()
	theirs := []byte(`{"generation": 1}`)
	must(t, os.WriteFile(filepath.Join(dir, "registered.json"), theirs, 0o600))
	ours := []byte("{\n  \"generation\": 1\n}\n")
	sameValue := func(got []byte) bool { return string(got) == string(theirs) || string(got) == string(ours) }
	must(t, r.PublishOnceSame("registered.json", ours, 0o600, 64, sameValue))
	if got, _ := os.ReadFile(filepath.Join(dir, "registered.json")); string(got) != string(theirs) {
		t.Fatalf("the file was rewritten: %q", got)
	}
	if err := r.PublishOnceSame("registered.json", ours, 0o600, 8, sameValue); !errors.Is(err, ErrConflict) {
		t.Fatalf("a file larger than max: %v", err)
	}
	if err := r.PublishOnceSame("registered.json", ours, 0o600, 64, func([]byte) bool { return false }); !errors.Is(err, ErrConflict) {
		t.Fatalf("another value: %v", err)
	}
	must(t, r.PublishOnceSame("new.json", ours, 0o600, 64, sameValue))
	if got, _ := os.ReadFile(filepath.Join(dir, "new.json")); string(got) != string(ours) {
		t.Fatalf("new file: %q", got)
	}
	assertNoTemp(t, dir)
}
