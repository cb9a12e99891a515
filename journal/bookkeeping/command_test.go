package bookkeeping

import (
	"testing"
)

// The command's copy is recorded in the root bucket without a new schema
// version: a database holding it is still version 2, which every installer
// that reads version 2 opens, read-only too.
func TestCommandRecord(t *testing.T) {
	db := openTestDB(t)
	if _, ok, err := db.GetCommand(); err != nil || ok {
		t.Fatalf("a new database records a command: %v %v", ok, err)
	}
	if err := db.SetCommand(Command{Path: "usr/local/sbin/x", SHA256: "ab"}); err == nil {
		t.Error("a relative path was recorded")
	}
	want := Command{Path: "/usr/local/sbin/oac-node-install", SHA256: "ab", Version: "v1"}
	must(t, db.SetCommand(want))
	got, ok, err := db.GetCommand()
	if err != nil || !ok || got.Path != want.Path || got.SHA256 != want.SHA256 || got.Version != want.Version || got.Written.IsZero() {
		t.Fatalf("GetCommand = %+v %v %v", got, ok, err)
	}
	path := db.Path()
	must(t, db.Close())
	if v := readVersion(t, path); v != "2" {
		t.Errorf("schema version %q, want 2", v)
	}
	ro, err := OpenReadOnly(path)
	must(t, err)
	if got, ok, err := ro.GetCommand(); err != nil || !ok || got.SHA256 != "ab" {
		t.Errorf("read-only GetCommand = %+v %v %v", got, ok, err)
	}
	must(t, ro.Close())
	db, err = Open(path)
	must(t, err)
	must(t, db.ForgetCommand())
	if _, ok, err := db.GetCommand(); err != nil || ok {
		t.Errorf("the command is still recorded: %v %v", ok, err)
	}
	must(t, db.Close())
}
