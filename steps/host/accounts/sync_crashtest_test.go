//go:build crashtest

package accounts

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// hostDatabases lays out etc/passwd, group and shadow (no gshadow) under a
// temporary host root.
func hostDatabases(t *testing.T) (root string, dbs Databases) {
	t.Helper()
	root = t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"passwd", "group", "shadow"} {
		if err := os.WriteFile(filepath.Join(root, "etc", name), []byte("root:x:0:0::/root:/bin/sh\n"), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return root, Under(root)
}

// syncsOf returns how many fsyncs of each path f made.
func syncsOf(f func(), paths ...string) []int {
	n := make([]int, len(paths))
	for i, p := range paths {
		n[i] = safefile.SyncCount(p)
	}
	f()
	for i, p := range paths {
		n[i] = safefile.SyncCount(p) - n[i]
	}
	return n
}

// shadow-utils renames its new databases into place without fsync: after
// every command, whatever its exit status, the databases that exist and
// /etc are fsynced, so a power cut cannot take the change back.
func TestCommandsSyncTheDatabases(t *testing.T) {
	ctx := context.Background()
	dir, _ := standIns(t)
	root, dbs := hostDatabases(t)
	c := Commands{Path: dir, Databases: dbs}
	etc := filepath.Join(root, "etc")
	paths := []string{dbs.Passwd, dbs.Group, filepath.Join(etc, "shadow"), etc}
	for _, tc := range []struct {
		name, program string
		fail          bool
		call          func() error
	}{
		{"useradd", "useradd", false, func() error { return c.CreateServiceAccount(ctx, "/usr/sbin/nologin") }},
		{"usermod", "usermod", false, func() error { return c.AddToGroup(ctx, "docker") }},
		{"gpasswd", "gpasswd", false, func() error { return c.RemoveFromGroup(ctx, "docker") }},
		{"userdel", "userdel", false, func() error { return c.DeleteServiceAccount(ctx) }},
		{"userdel that fails", "userdel", true, func() error { return c.DeleteServiceAccount(ctx) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fail {
				os.WriteFile(filepath.Join(dir, tc.program+".exit"), []byte("1"), 0o644)
				defer os.Remove(filepath.Join(dir, tc.program+".exit"))
			}
			var err error
			got := syncsOf(func() { err = tc.call() }, paths...)
			if (err != nil) != tc.fail {
				t.Fatalf("err = %v", err)
			}
			for i, n := range got {
				if n == 0 {
					t.Errorf("%s ran without fsync of %s", tc.program, paths[i])
				}
			}
		})
	}
}

// A program that is not installed never ran: nothing to sync.
func TestCommandsSyncNothingWhenNothingRan(t *testing.T) {
	root, dbs := hostDatabases(t)
	etc := filepath.Join(root, "etc")
	var err error
	got := syncsOf(func() { err = Commands{Path: t.TempDir(), Databases: dbs}.DeleteServiceAccount(context.Background()) }, etc)
	if err == nil || got[0] != 0 {
		t.Fatalf("err %v, %d fsyncs of %s", err, got[0], etc)
	}
}

// Sync of the databases found in place (an earlier run's change): each
// existing file and /etc; a missing gshadow is skipped.
func TestDatabasesSync(t *testing.T) {
	root, dbs := hostDatabases(t)
	etc := filepath.Join(root, "etc")
	var err error
	got := syncsOf(func() { err = dbs.Sync() }, dbs.Passwd, dbs.Group, filepath.Join(etc, "shadow"), etc)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != 1 || got[1] != 1 || got[2] != 1 || got[3] != 1 {
		t.Fatalf("fsyncs of passwd, group, shadow, /etc: %v; want one each", got)
	}
}
