package testhost_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
)

func init() { helpers["unit-reload"] = helperUnitReload }

// A unit's file written while systemd runs is used as it is on disk after
// systemd.ReloadIfNeeded, which reloads only when systemd has not loaded
// that file: a new unit (also one whose name systemd cached as not-found
// before the file existed), a changed unit file, an unchanged one.
func TestHostReloadIfNeeded(t *testing.T) {
	h := testhost.Start(t)
	cmd := h.Command(context.Background(), os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=unit-reload")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper unit-reload inside the test host: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
}

const reloadUnit = "oac-testhost-reload.service"

// reloadUnitText starts a program that writes version to /run.
func reloadUnitText(version string) string {
	return "[Service]\nType=exec\nExecStart=/bin/sh -c 'echo " + version + " >/run/oac-testhost-reload.out; exec sleep infinity'\n"
}

func helperUnitReload(ctx context.Context) error {
	m, err := systemd.Dial(ctx)
	if err != nil {
		return err
	}
	defer m.Close()
	path := filepath.Join(systemd.UnitDir, reloadUnit)
	// The name is looked up before the file exists: systemd caches it as
	// not-found.
	if st, err := m.State(ctx, reloadUnit); err != nil || st.LoadState != "not-found" {
		return fmt.Errorf("before the file: %v %v", st, err)
	}
	defer func() {
		m.Stop(ctx, reloadUnit)
		os.Remove(path)
		os.Remove("/run/oac-testhost-reload.out")
		m.Reload(ctx)
	}()
	for _, tc := range []struct {
		name, version string
		write         bool
		want          string // "reload", "no reload" or "" for either
	}{
		{"new unit", "v1", true, ""},
		{"unchanged", "v1", false, "no reload"},
		{"rewritten with the same text", "v1", true, ""},
		{"changed", "v2", true, "reload"},
		{"unchanged after the change", "v2", false, "no reload"},
	} {
		if tc.write {
			// A later modification time than the loaded file's, as a
			// rerun's write has.
			time.Sleep(20 * time.Millisecond)
			if err := os.WriteFile(path+".tmp", []byte(reloadUnitText(tc.version)), 0o644); err != nil {
				return err
			}
			if err := os.Rename(path+".tmp", path); err != nil {
				return err
			}
		}
		reloaded, err := systemd.ReloadIfNeeded(ctx, m, reloadUnit)
		if err != nil {
			return fmt.Errorf("%s: %w", tc.name, err)
		}
		if (tc.want == "reload" && !reloaded) || (tc.want == "no reload" && reloaded) {
			return fmt.Errorf("%s: reloaded %v, want %s", tc.name, reloaded, tc.want)
		}
		fmt.Printf("%s: reloaded %v\n", tc.name, reloaded)
		st, err := m.State(ctx, reloadUnit)
		if err != nil || st.LoadState != "loaded" || st.NeedDaemonReload {
			return fmt.Errorf("%s: after: %v %v (need reload %v)", tc.name, st, err, st.NeedDaemonReload)
		}
		os.Remove("/run/oac-testhost-reload.out")
		if err := m.Stop(ctx, reloadUnit); err != nil {
			return fmt.Errorf("%s: %w", tc.name, err)
		}
		if err := m.Start(ctx, reloadUnit); err != nil {
			return fmt.Errorf("%s: %w", tc.name, err)
		}
		var got []byte
		for i := 0; i < 250; i++ {
			if got, err = os.ReadFile("/run/oac-testhost-reload.out"); err == nil && len(got) > 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if strings.TrimSpace(string(got)) != tc.version {
			return fmt.Errorf("%s: the unit ran %q, want %s (its file's)", tc.name, got, tc.version)
		}
	}
	return nil
}
