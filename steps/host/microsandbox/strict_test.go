package microsandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// msb's output and the store marker are read with the strict decoder: a
// key given twice, or a case variant of the marker's key, is refused
// instead of being read as its last value.
func TestOutputAndMarkerRefuseDuplicateKeys(t *testing.T) {
	t.Run("sandbox list", func(t *testing.T) {
		f := newFake(t)
		f.answer("sandbox-list", `[{"name": "a", "name": "b"}]`, 0)
		if _, err := f.cli.Sandboxes(context.Background()); !errors.Is(err, ErrInventoryIncomplete) {
			t.Fatalf("Sandboxes: %v, want ErrInventoryIncomplete", err)
		}
	})
	t.Run("image inspect", func(t *testing.T) {
		d := "sha256:" + strings.Repeat("a", 64)
		out := `{"digest": "` + d + `", "digest": "sha256:` + strings.Repeat("b", 64) + `", "architecture": "amd64", "os": "linux"}`
		if _, err := parseInspect([]byte(out)); !errors.Is(err, ErrMalformedOutput) {
			t.Fatalf("parseInspect: %v, want ErrMalformedOutput", err)
		}
	})
	for name, marker := range map[string]string{
		"marker case variant": `{"INSTALLATION_ID": "other", "installation_id": "` + installation + `"}`,
		"marker duplicate":    `{"installation_id": "other", "installation_id": "` + installation + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			store := filepath.Join(t.TempDir(), ".oac", "m", "abcdef012345")
			os.MkdirAll(store, 0o700)
			os.WriteFile(filepath.Join(store, MarkerName), []byte(marker), 0o600)
			if err := CheckStoreOwner(store, installation, os.Getuid()); !errors.Is(err, ErrStoreNotOwned) {
				t.Fatalf("CheckStoreOwner: %v, want ErrStoreNotOwned", err)
			}
		})
	}
}
