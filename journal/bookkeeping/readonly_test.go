package bookkeeping

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// OpenReadOnly reads what Open wrote and leaves the file byte for byte as
// it was, even with a mode Open would narrow; it creates nothing.
func TestOpenReadOnlyChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "installer.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PutAccount(Account{Name: "oac-node", Created: true, UID: 990}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	os.Chmod(path, 0o644)
	before, _ := os.ReadFile(path)
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	acct, ok, err := ro.Account()
	if err != nil || !ok || acct.UID != 990 || !acct.Created {
		t.Fatalf("account %+v %v %v", acct, ok, err)
	}
	if err := ro.PutAccount(Account{Name: "oac-node"}); err == nil {
		t.Fatal("a read-only database took a write")
	}
	ro.Close()
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatal("OpenReadOnly changed the database file")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode())
	}

	missing := filepath.Join(t.TempDir(), "installer.db")
	if _, err := OpenReadOnly(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing database: %v", err)
	}
	if _, err := os.Lstat(missing); !os.IsNotExist(err) {
		t.Fatal("OpenReadOnly created the database")
	}
}
