package accounts

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// standIns writes shell scripts named like the shadow-utils programs into a
// directory: each appends its argv and environment to a log and exits with
// the status named in the file <program>.exit, if any.
func standIns(t *testing.T) (dir, log string) {
	t.Helper()
	dir = t.TempDir()
	log = filepath.Join(dir, "log")
	for _, p := range []string{"useradd", "usermod", "gpasswd", "userdel", "groupdel"} {
		script := "#!/bin/sh\nprintf '%s' \"$0\" >>" + log + "\nfor a in \"$@\"; do printf ' [%s]' \"$a\" >>" + log + "; done\n" +
			"printf ' env=%s\\n' \"$(/usr/bin/env | /usr/bin/sort | /usr/bin/tr '\\n' ' ')\" >>" + log + "\n" +
			"if [ -f \"$0.exit\" ]; then echo \"${0##*/}: refused\" >&2; read s <\"$0.exit\"; exit $s; fi\n"
		if err := os.WriteFile(filepath.Join(dir, p), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, log
}

func TestCommandsRunTheContractCommands(t *testing.T) {
	dir, log := standIns(t)
	t.Setenv("OAC_SECRET_IN_PARENT", "must-not-reach-the-child")
	c := Commands{Path: dir, Databases: Under(dir)}
	ctx := context.Background()
	for _, call := range []func() error{
		func() error { return c.CreateServiceAccount(ctx, "/usr/sbin/nologin") },
		func() error { return c.AddToGroup(ctx, "docker") },
		func() error { return c.RemoveFromGroup(ctx, "docker") },
		func() error { return c.DeleteServiceAccount(ctx) },
		func() error { return c.DeleteServiceGroup(ctx) },
	} {
		if err := call(); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []string{
		dir + "/useradd [--system] [--no-log-init] [--user-group] [--no-create-home] [--home-dir] [/var/lib/oac-node] [--shell] [/usr/sbin/nologin] [oac-node]",
		dir + "/usermod [--append] [--groups] [docker] [oac-node]",
		dir + "/gpasswd [--delete] [oac-node] [docker]",
		dir + "/userdel [oac-node]",
		dir + "/groupdel [oac-node]",
	}
	if len(lines) != len(want) {
		t.Fatalf("log:\n%s", b)
	}
	for i, l := range lines {
		cmd, env, _ := strings.Cut(l, " env=")
		if cmd != want[i] {
			t.Errorf("command %d:\n got %s\nwant %s", i, cmd, want[i])
		}
		// The environment is the fixed one; sh adds PWD, SHLVL and _.
		for _, kv := range strings.Fields(env) {
			name, _, _ := strings.Cut(kv, "=")
			switch name {
			case "PATH", "LC_ALL", "PWD", "SHLVL", "_":
			default:
				t.Errorf("command %d got %s from the environment", i, kv)
			}
		}
		if !strings.Contains(env, "PATH="+dir+" ") || !strings.Contains(env, "LC_ALL=C") {
			t.Errorf("command %d environment: %s", i, env)
		}
	}
}

func TestCommandsClassifyExitStatus(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, program, status string
		call                  func(Commands) error
		want                  error
	}{
		{"useradd: name in use", "useradd", "9", func(c Commands) error { return c.CreateServiceAccount(ctx, "/usr/sbin/nologin") }, ErrExists},
		{"usermod: no such group", "usermod", "6", func(c Commands) error { return c.AddToGroup(ctx, "kvm") }, ErrNotFound},
		{"userdel: no such user", "userdel", "6", func(c Commands) error { return c.DeleteServiceAccount(ctx) }, ErrNotFound},
		{"groupdel: no such group", "groupdel", "6", func(c Commands) error { return c.DeleteServiceGroup(ctx) }, ErrNotFound},
		{"userdel: still in use", "userdel", "8", func(c Commands) error { return c.DeleteServiceAccount(ctx) }, ErrInUse},
		{"useradd: other failure", "useradd", "1", func(c Commands) error { return c.CreateServiceAccount(ctx, "/usr/sbin/nologin") }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := standIns(t)
			os.WriteFile(filepath.Join(dir, tc.program+".exit"), []byte(tc.status), 0o644)
			err := tc.call(Commands{Path: dir, Databases: Under(dir)})
			if err == nil || !strings.Contains(err.Error(), "exit status "+tc.status) || !strings.Contains(err.Error(), tc.program+": refused") {
				t.Fatalf("err = %v", err)
			}
			for _, s := range []error{ErrExists, ErrNotFound, ErrInUse} {
				if errors.Is(err, s) != (s == tc.want) {
					t.Fatalf("errors.Is(%v, %v) = %v", err, s, !(s == tc.want))
				}
			}
		})
	}
	t.Run("program missing", func(t *testing.T) {
		err := Commands{Path: t.TempDir()}.DeleteServiceAccount(ctx)
		if err == nil || !strings.Contains(err.Error(), "userdel is not installed") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("relative shell", func(t *testing.T) {
		dir, log := standIns(t)
		if err := (Commands{Path: dir, Databases: Under(dir)}).CreateServiceAccount(ctx, "nologin"); err == nil {
			t.Fatal("a relative shell must be refused")
		}
		if _, err := os.Stat(log); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("nothing may run for a refused shell")
		}
	})
}
