package microsandbox

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

const installation = "0b5c8c4e-3f7a-4b8e-9d2a-6c1e5f0a7b3d"

func TestClaimStore(t *testing.T) {
	uid := os.Getuid()
	home := t.TempDir()
	store := filepath.Join(home, ".oac", "m", "abcdef012345")
	if err := ClaimStore(store, installation, uid); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(home, ".oac", "m"), store} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v", d, fi.Mode(), err)
		}
	}
	data, err := os.ReadFile(filepath.Join(store, MarkerName))
	if err != nil || string(data) != "{\n  \"installation_id\": \""+installation+"\"\n}\n" {
		t.Fatalf("marker %q %v", data, err)
	}
	if err := ClaimStore(store, installation, uid); err != nil {
		t.Fatalf("claiming again: %v", err)
	}
	os.WriteFile(filepath.Join(store, "images.db"), []byte("x"), 0o600)
	if err := ClaimStore(store, installation, uid); err != nil {
		t.Fatalf("claiming a used store of ours: %v", err)
	}
	if err := CheckStoreOwner(store, installation, uid); err != nil {
		t.Fatalf("CheckStoreOwner: %v", err)
	}
	other := "11111111-2222-4333-8444-555555555555"
	if err := ClaimStore(store, ident.InstallationID(other), uid); !errors.Is(err, ErrStoreNotOwned) {
		t.Fatalf("another installation's store: %v", err)
	}
	if err := CheckStoreOwner(store, ident.InstallationID(other), uid); !errors.Is(err, ErrStoreNotOwned) {
		t.Fatalf("CheckStoreOwner of another installation: %v", err)
	}
}

func TestClaimStoreRefusals(t *testing.T) {
	uid := os.Getuid()
	cases := []struct {
		name  string
		setup func(t *testing.T, store string)
	}{
		{"non-empty without marker", func(t *testing.T, store string) {
			os.MkdirAll(store, 0o700)
			os.WriteFile(filepath.Join(store, "sandbox.db"), nil, 0o600)
		}},
		{"marker with an unknown key", func(t *testing.T, store string) {
			os.MkdirAll(store, 0o700)
			os.WriteFile(filepath.Join(store, MarkerName), []byte(`{"installation_id": "`+installation+`", "x": 1}`), 0o600)
		}},
		{"marker mode 0644", func(t *testing.T, store string) {
			os.MkdirAll(store, 0o700)
			os.WriteFile(filepath.Join(store, MarkerName), []byte(`{"installation_id": "`+installation+`"}`), 0o644)
			os.Chmod(filepath.Join(store, MarkerName), 0o644)
		}},
		{"marker is a symlink", func(t *testing.T, store string) {
			os.MkdirAll(store, 0o700)
			target := filepath.Join(filepath.Dir(store), "elsewhere.json")
			os.WriteFile(target, []byte(`{"installation_id": "`+installation+`"}`), 0o600)
			os.Symlink(target, filepath.Join(store, MarkerName))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), ".oac", "m", "abcdef012345")
			c.setup(t, store)
			if err := ClaimStore(store, installation, uid); !errors.Is(err, ErrStoreNotOwned) {
				t.Fatalf("ClaimStore: %v", err)
			}
			if err := CheckStoreOwner(store, installation, uid); !errors.Is(err, ErrStoreNotOwned) {
				t.Fatalf("CheckStoreOwner: %v", err)
			}
		})
	}
	t.Run("store is a symlink", func(t *testing.T) {
		home := t.TempDir()
		os.MkdirAll(filepath.Join(home, ".oac", "m"), 0o700)
		real := filepath.Join(home, "real")
		os.Mkdir(real, 0o700)
		store := filepath.Join(home, ".oac", "m", "abcdef012345")
		os.Symlink(real, store)
		if err := ClaimStore(store, installation, uid); err == nil {
			t.Fatal("a symlinked store was claimed")
		}
		if _, err := os.Stat(filepath.Join(real, MarkerName)); !os.IsNotExist(err) {
			t.Error("marker written through the link")
		}
	})
	t.Run("missing marker", func(t *testing.T) {
		store := t.TempDir()
		if err := CheckStoreOwner(store, installation, uid); !errors.Is(err, ErrStoreNotOwned) {
			t.Fatalf("CheckStoreOwner: %v", err)
		}
	})
}
