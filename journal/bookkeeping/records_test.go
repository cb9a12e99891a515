package bookkeeping

import (
	"errors"
	"os"
	"reflect"
	"testing"
	"time"
)

func fixedNow(t *testing.T) time.Time {
	t.Helper()
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	old := now
	now = func() time.Time { return at }
	t.Cleanup(func() { now = old })
	return at
}

func TestInstallations(t *testing.T) {
	at := fixedNow(t)
	db := openTestDB(t)
	if _, err := db.GetInstallation("x"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing: got %v", err)
	}
	inst := Installation{
		ID: "0b6f2c3e-1111-4a4a-8b8b-222233334444", Provider: "docker",
		CoreURL: "https://core.example", NodeRoot: "/var/lib/oac-node/.oac/nodes/0b6f2c3e-1111-4a4a-8b8b-222233334444",
		Unit:                "/etc/systemd/system/oac-node-0b6f2c3e-1111-4a4a-8b8b-222233334444.service",
		EnvFile:             "/etc/oac-node/0b6f2c3e-1111-4a4a-8b8b-222233334444.env",
		AllowInsecureOrigin: true, CoreCA: "/var/lib/oac-node/core-ca.pem",
	}
	must(t, db.PutInstallation(inst))
	got, err := db.GetInstallation(inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	inst.Created = at
	if !reflect.DeepEqual(got, inst) {
		t.Fatalf("got %+v\nwant %+v", got, inst)
	}
	// A later put keeps the creation time.
	now = func() time.Time { return at.Add(time.Hour) }
	upd := inst
	upd.Created = time.Time{}
	upd.Provider = "microsandbox"
	must(t, db.PutInstallation(upd))
	got, _ = db.GetInstallation(inst.ID)
	if got.Provider != "microsandbox" || !got.Created.Equal(at) {
		t.Fatalf("after update %+v", got)
	}
	must(t, db.PutInstallation(Installation{ID: "a"}))
	list, err := db.ListInstallations()
	if err != nil || len(list) != 2 || list[0].ID != inst.ID || list[1].ID != "a" {
		t.Fatalf("list %+v %v", list, err)
	}
	if err := db.PutInstallation(Installation{}); err == nil {
		t.Fatal("empty id recorded")
	}
	must(t, db.DeleteInstallation("a"))
	must(t, db.DeleteInstallation("a"))
	if _, err := db.GetInstallation("a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted: got %v", err)
	}
}

func TestAccount(t *testing.T) {
	at := fixedNow(t)
	db := openTestDB(t)
	if _, found, err := db.Account(); found || err != nil {
		t.Fatalf("empty database: %v %v", found, err)
	}
	for _, tt := range []struct {
		name string
		acct Account
	}{
		{"created", Account{Name: "oac-node", Created: true, UID: 998}},
		{"adopted", Account{Name: "oac-node", UID: 1001, HomeMode: ptr(os.FileMode(0o755))}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			must(t, db.DeleteAccount())
			must(t, db.PutAccount(tt.acct))
			got, found, err := db.Account()
			if err != nil || !found {
				t.Fatalf("%v %v", found, err)
			}
			want := tt.acct
			want.Recorded = at
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v want %+v", got, want)
			}
		})
	}
	must(t, db.DeleteAccount())
	must(t, db.DeleteAccount())
	if _, found, _ := db.Account(); found {
		t.Fatal("account still recorded")
	}
}

func TestGroups(t *testing.T) {
	at := fixedNow(t)
	db := openTestDB(t)
	must(t, db.AddGroup("kvm"))
	must(t, db.AddGroup("docker"))
	now = func() time.Time { return at.Add(time.Hour) }
	must(t, db.AddGroup("docker"))
	got, err := db.Groups()
	if err != nil {
		t.Fatal(err)
	}
	want := []Group{{Name: "docker", Added: at}, {Name: "kvm", Added: at}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
	must(t, db.RemoveGroup("docker"))
	must(t, db.RemoveGroup("docker"))
	if got, _ := db.Groups(); len(got) != 1 || got[0].Name != "kvm" {
		t.Fatalf("after remove %+v", got)
	}
	if err := db.AddGroup(""); err == nil {
		t.Fatal("empty group recorded")
	}
}

func TestFilesAndNetworks(t *testing.T) {
	at := fixedNow(t)
	db := openTestDB(t)
	unit := File{Path: "/etc/systemd/system/oac-node-a.service", InstallationID: "a", Kind: FileUnit}
	if err := db.AddFile(unit); !errors.Is(err, ErrNotFound) {
		t.Fatalf("file of unknown installation: got %v", err)
	}
	if err := db.AddNetwork("oac-node-a", "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("network of unknown installation: got %v", err)
	}
	must(t, db.PutInstallation(Installation{ID: "a"}))
	must(t, db.PutInstallation(Installation{ID: "b"}))
	must(t, db.AddFile(unit))
	must(t, db.AddFile(unit))
	must(t, db.AddFile(File{Path: "/etc/oac-node/a.json", InstallationID: "a", Kind: FileRecord}))
	must(t, db.AddFile(File{Path: "/etc/oac-node/b.json", InstallationID: "b", Kind: FileRecord}))
	must(t, db.AddNetwork("oac-node-a", "a"))
	must(t, db.AddNetwork("oac-node-a", "a"))

	for _, tt := range []struct {
		name string
		err  error
	}{
		{"file of another installation", db.AddFile(File{Path: unit.Path, InstallationID: "b"})},
		{"network of another installation", db.AddNetwork("oac-node-a", "b")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, ErrOwned) {
				t.Fatalf("got %v, want ErrOwned", tt.err)
			}
		})
	}
	for _, p := range []string{"relative/path", "/etc/../etc/x", ""} {
		if err := db.AddFile(File{Path: p, InstallationID: "a"}); err == nil {
			t.Errorf("path %q recorded", p)
		}
	}

	files, err := db.Files("a")
	if err != nil {
		t.Fatal(err)
	}
	want := []File{
		{Path: "/etc/oac-node/a.json", InstallationID: "a", Kind: FileRecord, Created: at},
		{Path: unit.Path, InstallationID: "a", Kind: FileUnit, Created: at},
	}
	if !reflect.DeepEqual(files, want) {
		t.Fatalf("files %+v", files)
	}
	if all, _ := db.Files(""); len(all) != 3 {
		t.Fatalf("all files %+v", all)
	}
	if nets, _ := db.Networks("b"); len(nets) != 0 {
		t.Fatalf("networks of b %+v", nets)
	}

	// The installation's record stays while it owns anything.
	if err := db.DeleteInstallation("a"); !errors.Is(err, ErrInUse) {
		t.Fatalf("delete while owning files: got %v", err)
	}
	for _, f := range files {
		must(t, db.RemoveFile(f.Path))
	}
	if err := db.DeleteInstallation("a"); !errors.Is(err, ErrInUse) {
		t.Fatalf("delete while owning a network: got %v", err)
	}
	must(t, db.RemoveNetwork("oac-node-a"))
	must(t, db.RemoveNetwork("oac-node-a"))
	must(t, db.RemoveFile(unit.Path))
	must(t, db.DeleteInstallation("a"))
	if all, _ := db.Files(""); len(all) != 1 || all[0].InstallationID != "b" {
		t.Fatalf("files left %+v", all)
	}
}

func ptr[T any](v T) *T { return &v }
