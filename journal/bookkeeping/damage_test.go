package bookkeeping

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

// damageFixture writes a database holding a few records of every kind and
// returns its path and bytes.
func damageFixture(t *testing.T) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "installer.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	must(t, db.PutAccount(Account{Name: "oac-node", Created: true, UID: 991}))
	must(t, db.AddGroup("docker"))
	for i := range 20 {
		id := fmt.Sprintf("0b6c1f0e-5d1a-4c8e-9a7b-3f2d1e0c9b%02d", i)
		must(t, db.PutInstallation(Installation{ID: ident.InstallationID(id), Provider: "docker", CoreURL: "https://core.example.com"}))
		must(t, db.AddFile(File{Path: "/etc/oac-node/" + id + ".json", InstallationID: ident.InstallationID(id), Kind: "record"}))
		must(t, db.AddNetwork("oac-node-"+id, ident.InstallationID(id)))
	}
	must(t, db.Close())
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, data
}

// readAll reads every record through db.
func readAll(db *DB) error {
	if _, _, err := db.Account(); err != nil {
		return err
	}
	if _, err := db.Groups(); err != nil {
		return err
	}
	insts, err := db.ListInstallations()
	if err != nil {
		return err
	}
	for _, in := range insts {
		if _, err := db.Files(in.ID); err != nil {
			return err
		}
		if _, err := db.Networks(in.ID); err != nil {
			return err
		}
	}
	return nil
}

// A damaged file is an ErrDamaged error from Open and OpenReadOnly, never
// a panic, a SIGBUS or a new empty database; the file is left as it was.
// (An empty file is not damaged: TestAnInterruptedCreationIsMadeAnew.)
func TestDamagedDatabaseIsAnError(t *testing.T) {
	path, good := damageFixture(t)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := readMeta(f, 0)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	page, used := int(m.pageSize), int(m.highMark)*int(m.pageSize) // bbolt grows the file past the pages it uses
	flip := func(off int) func([]byte) []byte {
		return func(b []byte) []byte { b = bytes.Clone(b); b[off] ^= 0xff; return b }
	}
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"one byte", func(b []byte) []byte { return b[:1] }},
		{"half a meta page", func(b []byte) []byte { return b[:40] }},
		{"one page", func(b []byte) []byte { return b[:page] }},
		{"three pages", func(b []byte) []byte { return b[:3*page] }},
		{"the last used page cut", func(b []byte) []byte { return b[:used-page] }},
		{"the last used byte cut", func(b []byte) []byte { return b[:used-1] }},
		{"both meta pages' magic", func(b []byte) []byte { b = flip(16)(b); return flip(page + 16)(b) }},
		{"both meta pages' checksums", func(b []byte) []byte { b = flip(16 + 60)(b); return flip(page + 16 + 60)(b) }},
		{"zeroes", func(b []byte) []byte { return make([]byte, len(b)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.damage(good)
			path := filepath.Join(t.TempDir(), "installer.db")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, open := range []struct {
				name string
				fn   func(string) (*DB, error)
			}{{"Open", Open}, {"OpenReadOnly", OpenReadOnly}} {
				db, err := open.fn(path)
				if err == nil {
					db.Close()
				}
				if !errors.Is(err, ErrDamaged) {
					t.Errorf("%s: %v, want ErrDamaged", open.name, err)
				}
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Error("opening the damaged file changed it")
			}
		})
	}
}

// Bytes flipped anywhere in the file never crash a command: Open refuses
// with ErrDamaged (ErrNewer for a flipped schema version), or the records
// read back either whole or as ErrDamaged.
func TestFlippedBytesNeverCrash(t *testing.T) {
	_, good := damageFixture(t)
	r := rand.New(rand.NewPCG(7, 11))
	dir := t.TempDir()
	refused, readErrs := 0, 0
	for i := range 400 {
		data := bytes.Clone(good)
		for range 1 + r.IntN(8) {
			data[r.IntN(len(data))] ^= byte(1 + r.IntN(255))
		}
		path := filepath.Join(dir, fmt.Sprintf("db-%d", i))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := OpenReadOnly(path)
		if err != nil {
			if !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrNewer) {
				t.Fatalf("case %d: OpenReadOnly: %v, want ErrDamaged", i, err)
			}
			refused++
			continue
		}
		if err := readAll(db); err != nil {
			if !errors.Is(err, ErrDamaged) {
				t.Errorf("case %d: a read failed with %v, want ErrDamaged", i, err)
			}
			readErrs++
		}
		db.Close()
	}
	t.Logf("400 damaged copies: %d refused at open, %d failed a read", refused, readErrs)
}

// A file the installer's own first run left while creating it — empty
// (the disk was full at bbolt's first write) or initialized by bbolt with
// no transaction committed (full at the schema's) — provably never held a
// record: OpenReadOnly treats it as no bookkeeping (fs.ErrNotExist, the
// file untouched), Open makes it anew. A file with a committed transaction
// stays refused (TestDamagedDatabaseIsAnError).
func TestAnInterruptedCreationIsMadeAnew(t *testing.T) {
	initialized := func(t *testing.T) []byte {
		p := filepath.Join(t.TempDir(), "fresh.db")
		bdb, err := bolt.Open(p, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		bdb.Close()
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, tc := range []struct {
		name string
		data func(t *testing.T) []byte
	}{
		{"empty", func(*testing.T) []byte { return nil }},
		{"initialized, no transaction", initialized},
		{"initialized, cut after the meta pages", func(t *testing.T) []byte {
			data := initialized(t)
			return data[:len(data)/2]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.data(t)
			path := filepath.Join(t.TempDir(), "installer.db")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if db, err := OpenReadOnly(path); !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, ErrHoldsNothing) {
				if err == nil {
					db.Close()
				}
				t.Fatalf("OpenReadOnly: %v, want ErrHoldsNothing (fs.ErrNotExist)", err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Fatal("OpenReadOnly changed the file")
			}
			db, err := Open(path)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			if err := db.PutAccount(Account{Name: "oac-node", Created: true, UID: 999}); err != nil {
				t.Fatal(err)
			}
			db.Close()
			ro, err := OpenReadOnly(path)
			if err != nil {
				t.Fatalf("OpenReadOnly after Open: %v", err)
			}
			defer ro.Close()
			if a, ok, err := ro.Account(); err != nil || !ok || a.UID != 999 {
				t.Fatalf("the record written after the file was made anew: %+v %v %v", a, ok, err)
			}
		})
	}
}

// An empty file beside a host record is not one the first run left while
// creating it (the first run writes no record before the bookkeeping): it
// held records the file system lost, so it is refused as damaged, by
// OpenReadOnly and Open alike, and left as it is.
func TestAnEmptyFileBesideRecordsIsDamaged(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "installer.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "0b6c1f0e-5d1a-4c8e-9a7b-3f2d1e0c9b8a.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if db, err := OpenReadOnly(path); !errors.Is(err, ErrDamaged) {
		if err == nil {
			db.Close()
		}
		t.Errorf("OpenReadOnly: %v, want ErrDamaged", err)
	}
	if db, err := Open(path); !errors.Is(err, ErrDamaged) {
		if err == nil {
			db.Close()
		}
		t.Errorf("Open: %v, want ErrDamaged", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the file after the refusals: %v %v", fi, err)
	}
}
