package accountstest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/accounts"
)

func TestFakeEditsTheDatabases(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0:root:/root:/bin/bash\nsvc:x:999:999::/:/usr/sbin/nologin\n"), 0o644)
	os.WriteFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\nsvc:x:999:\ndocker:x:990:alice\n"), 0o644)
	f, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	db := accounts.Under(root)
	if err := f.CreateServiceAccount(ctx, "/usr/sbin/nologin"); err != nil {
		t.Fatal(err)
	}
	if err := f.CreateServiceAccount(ctx, "/usr/sbin/nologin"); !errors.Is(err, accounts.ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	if err := f.AddToGroup(ctx, "docker"); err != nil {
		t.Fatal(err)
	}
	if err := f.AddToGroup(ctx, "kvm"); !errors.Is(err, accounts.ErrNotFound) {
		t.Fatalf("missing group: %v", err)
	}
	facts, err := db.Facts(filepath.Join(root, "var/lib/oac-node"), -1)
	if err != nil || facts.User == nil || facts.User.UID != 998 || facts.PrimaryGroup != "oac-node" || !reflect.DeepEqual(facts.Supplementary, []string{"docker"}) {
		t.Fatalf("after create: %+v %v", facts, err)
	}
	if d, err := accounts.Decide(facts); err != nil || d != accounts.UseExisting {
		t.Fatalf("the created account must be adoptable: %v %v", d, err)
	}
	if err := f.RemoveFromGroup(ctx, "docker"); err != nil {
		t.Fatal(err)
	}
	if g, _ := db.LookupGroup("docker"); !reflect.DeepEqual(g.Members, []string{"alice"}) {
		t.Fatalf("docker members: %v", g.Members)
	}
	if err := f.DeleteServiceAccount(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LookupUser("oac-node"); !errors.Is(err, accounts.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if _, err := db.LookupGroup("oac-node"); !errors.Is(err, accounts.ErrNotFound) {
		t.Fatalf("own group after delete: %v", err)
	}
	if err := f.DeleteServiceAccount(ctx); !errors.Is(err, accounts.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	want := []string{
		"useradd --system --user-group --no-create-home --home-dir /var/lib/oac-node --shell /usr/sbin/nologin oac-node",
		"useradd --system --user-group --no-create-home --home-dir /var/lib/oac-node --shell /usr/sbin/nologin oac-node",
		"usermod --append --groups docker oac-node", "usermod --append --groups kvm oac-node",
		"gpasswd --delete oac-node docker", "userdel oac-node", "userdel oac-node",
	}
	if got := f.Calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("calls:\n%q\nwant\n%q", got, want)
	}
	injected := errors.New("passwd is locked")
	f.Fail("create", injected)
	if err := f.CreateServiceAccount(ctx, "/usr/sbin/nologin"); !errors.Is(err, injected) {
		t.Fatalf("injected: %v", err)
	}
}
