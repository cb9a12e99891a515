//go:build crashtest

package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// syncDelta runs f and returns how many fsyncs of each path it made.
func syncDelta(f func(), paths ...string) []int {
	before := make([]int, len(paths))
	for i, p := range paths {
		before[i] = SyncCount(p)
	}
	f()
	for i, p := range paths {
		before[i] = SyncCount(p) - before[i]
	}
	return before
}

// Every success that finds the file already in place makes it and its
// directory durable first (a crash between an earlier rename and its
// directory fsync leaves them in the page cache only). A SIGKILL test
// cannot see an fsync; the layer's crashtest record can.
func TestAlreadyThereIsMadeDurable(t *testing.T) {
	data := []byte("{\"generation\":1}\n")
	tests := []struct {
		name string
		// run finds the file in place (written without syncing).
		run func(t *testing.T, r *Root, rel string) error
	}{
		{"PublishOnce finds equal bytes", func(t *testing.T, r *Root, rel string) error {
			return r.PublishOnce(rel, data, 0o600)
		}},
		{"PublishOnce by path finds equal bytes", func(t *testing.T, r *Root, rel string) error {
			return PublishOnce(r.Join(rel), data, 0o600)
		}},
		{"PublishOnce loses the race to equal bytes", func(t *testing.T, r *Root, rel string) error {
			// The first look finds nothing; another publisher links the
			// same bytes in before this one does (EEXIST).
			full := r.Join(rel)
			if err := os.Remove(full); err != nil {
				t.Fatal(err)
			}
			beforeLink = func() { writeFile(t, full, string(data), 0o600) }
			defer func() { beforeLink = nil }()
			return r.PublishOnce(rel, data, 0o600)
		}},
		{"Durable", func(t *testing.T, r *Root, rel string) error {
			return r.Durable(rel, Expect{UID: os.Geteuid(), Mode: 0o600})
		}},
		{"DurablePath", func(t *testing.T, r *Root, rel string) error {
			return DurablePath(r.Join(rel), Expect{UID: os.Geteuid(), Mode: 0o600})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			rel := "sub/3.json"
			writeFile(t, filepath.Join(dir, rel), string(data), 0o600)
			r := openTestRoot(t, dir)
			var err error
			got := syncDelta(func() { err = tt.run(t, r, rel) }, filepath.Join(dir, rel), filepath.Join(dir, "sub"))
			if err != nil {
				t.Fatal(err)
			}
			if got[0] == 0 || got[1] == 0 {
				t.Fatalf("success with fsyncs of file %d, directory %d; want both", got[0], got[1])
			}
		})
	}
}

// A write-once file holding other bytes is a conflict, and nothing is
// synced or changed.
func TestConflictIsNotSynced(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "f"), "old", 0o600)
	r := openTestRoot(t, dir)
	var err error
	got := syncDelta(func() { err = r.PublishOnce("f", []byte("new"), 0o600) }, filepath.Join(dir, "f"))
	if !errors.Is(err, ErrConflict) || got[0] != 0 {
		t.Fatalf("got %v after %d fsyncs", err, got[0])
	}
}

// Every write and commit syncs the file before its rename and the
// directory after.
func TestWritesSyncFileAndDirectory(t *testing.T) {
	dir := t.TempDir()
	r := openTestRoot(t, dir)
	tests := []struct {
		name string
		tmp  string // the temporary name that is synced before the rename
		run  func() error
	}{
		{"AtomicWrite", ".a.tmp", func() error { return r.AtomicWrite("a", []byte("x"), 0o600) }},
		{"AtomicWriteTemp", ".generation-b", func() error { return r.AtomicWriteTemp("b", ".generation-", []byte("x"), 0o600) }},
		{"PublishOnce", ".c.tmp", func() error { return r.PublishOnce("c", []byte("x"), 0o600) }},
		{"Pending", ".d.partial", func() error {
			p, err := r.OpenPending(".d.partial", "test")
			if err != nil {
				return err
			}
			if _, err := p.File().Write([]byte("x")); err != nil {
				return err
			}
			return p.Commit("d", 0o644)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			got := syncDelta(func() { err = tt.run() }, filepath.Join(dir, tt.tmp), dir)
			if err != nil {
				t.Fatal(err)
			}
			if got[0] != 1 || got[1] != 1 {
				t.Fatalf("fsyncs of file %d, directory %d; want 1 and 1", got[0], got[1])
			}
		})
	}
}
