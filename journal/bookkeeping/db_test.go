package bookkeeping

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

func openTestDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "installer.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpenCreatesPrivateFile(t *testing.T) {
	old := unix.Umask(0)
	defer unix.Umask(old)
	path := filepath.Join(t.TempDir(), "installer.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if db.Path() != path {
		t.Fatalf("Path %q", db.Path())
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if v := readVersion(t, path); v != "2" {
		t.Fatalf("version %q", v)
	}

	// A wider mode is narrowed on the next open.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode after reopen %v", fi.Mode())
	}
}

func TestOpenRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere.db")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "installer.db")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("got %v", err)
	}
}

func TestOpenBusy(t *testing.T) {
	old := openTimeout
	openTimeout = 50 * time.Millisecond
	defer func() { openTimeout = old }()
	path := filepath.Join(t.TempDir(), "installer.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = Open(path)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("got %v, want ErrBusy", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Fatalf("error does not name the file: %v", err)
	}
}

func TestOpenRefusesNewerVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "installer.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	withBolt(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRoot).Put(keyVersion, []byte("3"))
	})
	if _, err := Open(path); !errors.Is(err, ErrNewer) {
		t.Fatalf("got %v, want ErrNewer", err)
	}
	if v := readVersion(t, path); v != "3" {
		t.Fatalf("version changed to %q", v)
	}
}

func TestReopenKeepsRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "installer.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	must(t, db.PutInstallation(Installation{ID: "a", Provider: "docker"}))
	must(t, db.AddNetwork("oac-node-a", "a"))
	must(t, db.Close())
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if inst, err := db.GetInstallation("a"); err != nil || inst.Provider != "docker" {
		t.Fatalf("%+v %v", inst, err)
	}
	if nets, err := db.Networks("a"); err != nil || len(nets) != 1 {
		t.Fatalf("%+v %v", nets, err)
	}
}

// withBolt runs fn in an Update on the raw database file.
func withBolt(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	if err := bdb.Update(fn); err != nil {
		t.Fatal(err)
	}
}

func readVersion(t *testing.T, path string) string {
	t.Helper()
	var v string
	withBolt(t, path, func(tx *bolt.Tx) error {
		v = string(tx.Bucket(bucketRoot).Get(keyVersion))
		return nil
	})
	return v
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
