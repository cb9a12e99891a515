package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestPendingResumesAndCommits(t *testing.T) {
	dir := t.TempDir()
	r := openTestRoot(t, dir)
	p, err := r.OpenPending(".a.partial", "test")
	must(t, err)
	_, err = p.File().Write([]byte("hello, "))
	must(t, err)
	must(t, p.Close())

	// A rerun reopens what is there, without truncating it.
	p, err = r.OpenPending(".a.partial", "test")
	must(t, err)
	st, err := p.File().Stat()
	must(t, err)
	if st.Size() != 7 || st.Mode().Perm() != 0o600 {
		t.Fatalf("reopened part: %d bytes, mode %v", st.Size(), st.Mode())
	}
	_, err = p.File().WriteAt([]byte("world"), 7)
	must(t, err)
	must(t, p.Commit("a", 0o644))
	got, err := os.ReadFile(filepath.Join(dir, "a"))
	if err != nil || string(got) != "hello, world" {
		t.Fatalf("committed %q, %v", got, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "a")); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if _, err := os.Lstat(filepath.Join(dir, ".a.partial")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("pending name left: %v", err)
	}
}

func TestPendingNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a"), "theirs", 0o644)
	r := openTestRoot(t, dir)
	p, err := r.OpenPending(".a.partial", "test")
	must(t, err)
	_, err = p.File().Write([]byte("ours"))
	must(t, err)
	if err := p.Commit("a", 0o644); !errors.Is(err, os.ErrExist) {
		t.Fatalf("commit over an existing file: got %v, want os.ErrExist", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a")); string(got) != "theirs" {
		t.Fatalf("target replaced: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, ".a.partial")); string(got) != "ours" {
		t.Fatalf("pending file lost: %q", got)
	}
	must(t, p.Discard())
	if _, err := os.Lstat(filepath.Join(dir, ".a.partial")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("discarded pending file left: %v", err)
	}
}

func TestPendingRefusals(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		why   error
	}{
		{"symlink", func(t *testing.T, path string) {
			must(t, os.Symlink("/etc/hostname", path))
		}, ErrSymlink},
		{"fifo", func(t *testing.T, path string) {
			must(t, unix.Mkfifo(path, 0o600))
		}, ErrNotRegular},
		{"hard link", func(t *testing.T, path string) {
			writeFile(t, path+".other", "x", 0o600)
			must(t, os.Link(path+".other", path))
		}, ErrHardLinked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bothResolvers(t, func(t *testing.T) {
				dir := t.TempDir()
				tt.setup(t, filepath.Join(dir, ".a.partial"))
				r := openTestRoot(t, dir)
				done := make(chan error, 1)
				go func() {
					p, err := r.OpenPending(".a.partial", "test")
					if err == nil {
						p.Close()
					}
					done <- err
				}()
				select {
				case err := <-done:
					if !errors.Is(err, ErrUnsafe) || !errors.Is(err, tt.why) {
						t.Fatalf("got %v, want %v", err, tt.why)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("OpenPending blocked")
				}
			})
		})
	}
}

func TestDenyMode(t *testing.T) {
	dir := t.TempDir()
	must(t, os.Mkdir(filepath.Join(dir, "g"), 0o700))
	must(t, os.Chmod(filepath.Join(dir, "g"), 0o770))
	r := openTestRoot(t, dir)
	_, err := r.OpenDir("g", Expect{UID: AnyUID, DenyMode: 0o022})
	if !errors.Is(err, ErrUnsafeMode) {
		t.Fatalf("group-writable directory: got %v", err)
	}
	must(t, os.Chmod(filepath.Join(dir, "g"), 0o750))
	d, err := r.OpenDir("g", Expect{UID: AnyUID, DenyMode: 0o022})
	must(t, err)
	d.Close()
}

func TestCreateNew(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	dir := t.TempDir()
	r := openTestRoot(t, dir)
	f, err := r.CreateNew("1.lease", 0o640)
	must(t, err)
	f.Close()
	if fi, _ := os.Stat(filepath.Join(dir, "1.lease")); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if _, err := r.CreateNew("1.lease", 0o600); !errors.Is(err, os.ErrExist) {
		t.Fatalf("existing file: got %v, want os.ErrExist", err)
	}
	must(t, os.Symlink("/etc/hostname", filepath.Join(dir, "2.lease")))
	if _, err := r.CreateNew("2.lease", 0o600); !errors.Is(err, os.ErrExist) {
		t.Fatalf("symlink: got %v, want os.ErrExist", err)
	}
}
