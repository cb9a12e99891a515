//go:build crashtest

package diskfull

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func mount(t *testing.T) (*FS, string) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("diskfull: %v", err)
	}
	backing, mp := t.TempDir(), t.TempDir()
	f, err := Mount(backing, mp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return f, mp
}

// writeSynced creates name, writes data, fsyncs it and its directory: the
// space-needing operations create, write, fsync, fsync.
func writeSynced(dir, name string, data []byte) error {
	fd, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer fd.Close()
	if _, err := fd.Write(data); err != nil {
		return err
	}
	if err := fd.Sync(); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Counting sees each space-needing operation once; armed at n, the n-th
// fails with ENOSPC and so does every later one; with space back the same
// work succeeds and nothing is counted.
func TestDiskFullFromTheNthOperation(t *testing.T) {
	f, mp := mount(t)
	sub := filepath.Join(mp, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	f.Arm("sub", 0)
	if err := writeSynced(sub, "a", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(sub, "a"), filepath.Join(sub, "b")); err != nil {
		t.Fatal(err)
	}
	// Outside the subtree: never counted, never refused.
	if err := writeSynced(mp, "outside", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got := f.Count(); got != 5 {
		t.Fatalf("counted %d operations, want 5 (create, write, fsync, fsync dir, rename)", got)
	}
	for n := 1; n <= 5; n++ {
		f.Arm("sub", n)
		err := writeSynced(sub, "a", []byte("hello"))
		if err == nil {
			err = os.Rename(filepath.Join(sub, "a"), filepath.Join(sub, "c"))
		}
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("armed at %d: %v, want ENOSPC", n, err)
		}
		if f.Failed() < 1 {
			t.Fatalf("armed at %d: nothing counted as failed", n)
		}
		if err := os.Mkdir(filepath.Join(sub, "d"), 0o755); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("armed at %d, a later mkdir: %v, want ENOSPC", n, err)
		}
		os.Remove(filepath.Join(sub, "a")) // removals pass
	}
	f.SpaceBack()
	if err := writeSynced(sub, "a", []byte("hello")); err != nil {
		t.Fatalf("with space back: %v", err)
	}
	if err := os.Truncate(filepath.Join(sub, "a"), 1<<20); err != nil {
		t.Fatal(err)
	}
	f.Arm("", 1)
	if err := os.Truncate(filepath.Join(sub, "a"), 2<<20); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("growing a file on a full disk: %v", err)
	}
	if err := os.Truncate(filepath.Join(sub, "a"), 10); err != nil {
		t.Fatalf("shrinking a file on a full disk: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(sub, "b")); err != nil || string(data) != "hello" {
		t.Fatalf("reading on a full disk: %q %v", data, err)
	}
}
