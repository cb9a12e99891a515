package testhost

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// TestDetached boots a detached host, runs a command in it, and tears it
// down twice: once from its full record, once from a record that knows
// only the sub-cgroups (a booting process killed before it recorded PID 1).
func TestDetached(t *testing.T) {
	if err := CheckMachine(); err != nil {
		t.Skipf("testhost: %v", err)
	}
	before, err := TakeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		forget bool // drop PID 1 and the launcher from the record
	}{{"full record", false}, {"cgroups only", true}} {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			d, err := BootDetached(parent)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { TeardownDetached(d.Dir) })
			if !d.Running() || len(d.Cgroups) == 0 {
				t.Fatalf("booted host: %+v", d)
			}
			dirs, err := FindDetached(parent)
			if err != nil || len(dirs) != 1 || dirs[0] != d.Dir {
				t.Fatalf("FindDetached = %v, %v; want [%s]", dirs, err, d.Dir)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := d.Command(ctx, "cat", "/proc/1/comm").Output()
			if err != nil || strings.TrimSpace(string(out)) != "systemd" {
				t.Fatalf("PID 1 inside: %q %v", out, err)
			}
			pid, launcher := d.PID, d.Launcher
			if tc.forget {
				d.PID, d.PIDStart, d.Launcher, d.LauncherStart = 0, 0, 0, 0
				if err := d.save(); err != nil {
					t.Fatal(err)
				}
			}
			if err := TeardownDetached(d.Dir); err != nil {
				t.Fatal(err)
			}
			for _, p := range []int{pid, launcher} {
				if _, alive := procStart(p); alive {
					t.Errorf("pid %d is alive after TeardownDetached", p)
				}
			}
			for _, c := range append(d.Cgroups, d.Dir) {
				if _, err := os.Stat(c); !os.IsNotExist(err) {
					t.Errorf("%s remains after TeardownDetached (%v)", c, err)
				}
			}
			if err := TeardownDetached(d.Dir); err != nil {
				t.Errorf("a second TeardownDetached: %v", err)
			}
		})
	}
	after, err := TakeSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	if diff := before.Diff(after); len(diff) > 0 {
		t.Errorf("the machine changed:\n%s", strings.Join(diff, "\n"))
	}
}
