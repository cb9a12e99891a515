package bookkeeping

import (
	"errors"
	"os"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

// A takeover is recorded whole, in one transaction: the installation, the
// account (an adopted home's mode kept), the groups, the files and the
// unlabelled network; a bookkeeping that records an account already, or a
// file of another installation, refuses it and keeps none of it.
func TestTakeOver(t *testing.T) {
	fixedNow(t)
	db := openTestDB(t)
	id := ident.InstallationID("0b6f2c3e-1111-4a4a-8b8b-222233334444")
	mode := os.FileMode(0o755)
	tk := Takeover{
		Installation: Installation{ID: id, Provider: "docker", CoreURL: "https://core.example"},
		Account:      Account{Name: "oac-node", UID: 990, GID: 990, HomeMode: &mode},
		Groups:       []string{"docker"},
		Files:        []File{{Path: "/etc/oac-node/" + string(id) + ".json", Kind: FileRecord}, {Path: "/etc/systemd/system/oac-node-" + string(id) + ".service", Kind: FileUnit}},
		Network:      "oac-node-" + string(id),
	}
	if err := db.TakeOver(tk); err != nil {
		t.Fatal(err)
	}
	if inst, err := db.GetInstallation(id); err != nil || inst.Provider != "docker" {
		t.Errorf("installation: %+v %v", inst, err)
	}
	if a, ok, err := db.Account(); err != nil || !ok || a.Created || a.UID != 990 || a.HomeMode == nil || *a.HomeMode != 0o755 {
		t.Errorf("account: %+v %v %v", a, ok, err)
	}
	if g, _ := db.Groups(); len(g) != 1 || g[0].Name != "docker" {
		t.Errorf("groups: %+v", g)
	}
	if f, _ := db.Files(id); len(f) != 2 {
		t.Errorf("files: %+v", f)
	}
	if n, _ := db.Networks(id); len(n) != 1 || !n[0].Unlabelled {
		t.Errorf("networks: %+v", n)
	}
	if err := db.TakeOver(tk); !errors.Is(err, ErrOwned) {
		t.Errorf("a second takeover: %v, want ErrOwned", err)
	}

	other := openTestDB(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(other.PutInstallation(Installation{ID: "another"}))
	must(other.AddFile(File{Path: tk.Files[1].Path, InstallationID: "another", Kind: FileUnit}))
	if err := other.TakeOver(tk); !errors.Is(err, ErrOwned) {
		t.Fatalf("a unit of another installation: %v, want ErrOwned", err)
	}
	if _, ok, _ := other.Account(); ok {
		t.Error("the refused takeover recorded the account")
	}
	if _, err := other.GetInstallation(id); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused takeover recorded the installation: %v", err)
	}
}
