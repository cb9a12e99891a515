package systemd_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/host/systemd/systemdtest"
)

// ReloadIfNeeded reloads for a new unit file and a changed one, and not for
// one systemd has loaded as it is on disk.
func TestReloadIfNeeded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f := systemdtest.New(dir)
	path := filepath.Join(dir, unitName)
	for _, tc := range []struct {
		name string
		text string // written first; "" keeps the file
		want bool
	}{
		{"new unit", "[Service]\nExecStart=/bin/true\n", true},
		{"unchanged", "", false},
		{"rewritten with the same text", "[Service]\nExecStart=/bin/true\n", false},
		{"changed", "[Service]\nExecStart=/bin/false\n", true},
		{"unchanged after the change", "", false},
	} {
		if tc.text != "" {
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		before := len(f.Calls())
		reloaded, err := systemd.ReloadIfNeeded(ctx, f, unitName)
		if err != nil || reloaded != tc.want {
			t.Fatalf("%s: reloaded %v, %v; want %v", tc.name, reloaded, err, tc.want)
		}
		want := []string{"state " + unitName}
		if tc.want {
			want = append(want, "reload")
		}
		if got := f.Calls()[before:]; !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: calls %q, want %q", tc.name, got, want)
		}
		if st, err := f.State(ctx, unitName); err != nil || st.LoadState != "loaded" || st.NeedDaemonReload {
			t.Fatalf("%s: after: %v %v (need reload %v)", tc.name, st, err, st.NeedDaemonReload)
		}
	}
}
