package testhost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
)

// helperEnv selects a helper of this test binary, run inside the test host
// through nsenter, so the adapters' real implementations run there.
const helperEnv = "OAC_TESTHOST_HELPER"

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		fn, ok := helpers[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "no helper %q\n", name)
			os.Exit(2)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := fn(ctx)
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var helpers = map[string]func(context.Context) error{
	"systemd":         helperSystemd,
	"accounts-create": helperAccountsCreate,
	"node-unit":       helperNodeUnit,
	"accounts-delete": helperAccountsDelete,
}

const (
	tinyUnit  = "oac-testhost-tiny.service"
	failUnit  = "oac-testhost-fail.service"
	nodeID    = "0f6e8c2a-3b1d-4e5f-9a7b-1c2d3e4f5a6b"
	proxyText = `http://user:pa"ss\w$rd@proxy.example:3128`
	// oddRoot is a node root with the characters the unit escapes.
	oddRoot = "/var/lib/oac-testhost/odd dir/100%/$HOME;x"
)

func TestHost(t *testing.T) {
	h := testhost.Start(t)
	ctx := context.Background()
	if r, err := h.Exec(ctx, "systemd-analyze", "time"); err == nil {
		t.Logf("systemd-analyze time inside: %s", bytes.TrimSpace(r.Stdout))
	}
	t.Run("pid 1 is systemd in private namespaces", func(t *testing.T) {
		r, err := h.Exec(ctx, "cat", "/proc/1/comm")
		if err != nil || strings.TrimSpace(string(r.Stdout)) != "systemd" {
			t.Fatalf("PID 1 inside: %q %v", r.Stdout, err)
		}
		r, _ = h.Exec(ctx, "systemctl", "--failed", "--plain", "--no-legend")
		if len(bytes.TrimSpace(r.Stdout)) > 0 {
			t.Fatalf("failed units after boot:\n%s", r.Stdout)
		}
		if h.DockerSocket != "" {
			// The engine answers through the socket bound into /run.
			r, err := h.Exec(ctx, "curl", "-fsS", "--max-time", "20", "--unix-socket", "/run/docker.sock", "http://docker/_ping")
			if err != nil || r.Status != 0 || string(r.Stdout) != "OK" {
				t.Fatalf("the machine's Docker Engine does not answer on the private /run/docker.sock: %v %d %q %s", err, r.Status, r.Stdout, r.Stderr)
			}
		}
	})
	for _, u := range []struct{ name, text string }{
		{tinyUnit, "[Service]\nType=exec\nExecStart=/bin/sleep infinity\n\n[Install]\nWantedBy=multi-user.target\n"},
		{failUnit, "[Service]\nType=exec\nExecStart=/bin/sh -c 'exit 3'\n"},
	} {
		if err := os.WriteFile(filepath.Join(h.Etc(), "systemd/system", u.name), []byte(u.text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"systemd", "accounts-create", "node-unit", "accounts-delete"} {
		t.Run(name, func(t *testing.T) {
			cmd := h.Command(ctx, os.Args[0])
			cmd.Env = append(os.Environ(), helperEnv+"="+name)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("helper %s inside the test host: %v\n%s", name, err, out)
			}
		})
	}
	t.Run("the copies changed, the machine did not", func(t *testing.T) {
		inside, err := os.ReadFile(filepath.Join(h.Etc(), "passwd"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(inside, []byte("\noac-node:")) {
			t.Fatal("the account is still in the private /etc/passwd after userdel")
		}
		if _, err := os.Stat(filepath.Join(h.VarLib(), "oac-testhost/odd dir/100%/$HOME;x/args")); err != nil {
			t.Fatalf("the node unit's output is not in the private /var/lib: %v", err)
		}
		if _, err := os.Stat("/var/lib/oac-testhost"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the machine's /var/lib got the node root: %v", err)
		}
	})
}

// helperSystemd drives the real D-Bus Manager over the private socket and,
// where the machine has D-Bus (dbus.socket listens inside), the system bus.
func helperSystemd(ctx context.Context) error {
	dials := []func(context.Context) (*systemd.DBus, error){systemd.DialPrivate}
	want := "/run/systemd/private"
	if _, err := os.Stat("/run/dbus/system_bus_socket"); err == nil {
		dials = append(dials, systemd.DialSystemBus)
		want = "system bus"
	}
	auto, err := systemd.Dial(ctx)
	if err != nil {
		return err
	}
	auto.Close()
	if auto.Via != want {
		return fmt.Errorf("Dial used %s, want %s", auto.Via, want)
	}
	for _, dial := range dials {
		m, err := dial(ctx)
		if err != nil {
			return err
		}
		if err := lifecycle(ctx, m); err != nil {
			m.Close()
			return fmt.Errorf("over %s: %w", m.Via, err)
		}
		m.Close()
	}
	return nil
}

func lifecycle(ctx context.Context, m *systemd.DBus) error {
	wants := "/etc/systemd/system/multi-user.target.wants/" + tinyUnit
	if err := m.Reload(ctx); err != nil {
		return err
	}
	synced := syncCount(filepath.Dir(wants))
	if err := m.Enable(ctx, tinyUnit); err != nil {
		return err
	}
	if _, err := os.Lstat(wants); err != nil {
		return fmt.Errorf("enable made no link: %w", err)
	}
	if synced >= 0 && syncCount(filepath.Dir(wants)) == synced {
		return fmt.Errorf("enable did not fsync %s", filepath.Dir(wants))
	}
	if err := m.Start(ctx, tinyUnit); err != nil {
		return err
	}
	st, err := systemd.WaitActive(ctx, m, tinyUnit, 10*time.Second, 50*time.Millisecond)
	if err != nil {
		return err
	}
	if st.LoadState != "loaded" || st.SubState != "running" || st.NRestarts != 0 {
		return fmt.Errorf("started unit: %v", st)
	}
	if err := m.ResetFailed(ctx, tinyUnit); err != nil {
		return err
	}
	if err := m.Stop(ctx, tinyUnit); err != nil {
		return err
	}
	if st, err := m.State(ctx, tinyUnit); err != nil || st.ActiveState != "inactive" {
		return fmt.Errorf("stopped unit: %v %v", st, err)
	}
	synced = syncCount(filepath.Dir(wants))
	if err := m.Disable(ctx, tinyUnit); err != nil {
		return err
	}
	if _, err := os.Lstat(wants); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("disable left the link: %v", err)
	}
	if synced >= 0 && syncCount(filepath.Dir(wants)) == synced {
		return fmt.Errorf("disable did not fsync %s", filepath.Dir(wants))
	}

	// A unit whose program exits 3: the start job is done (Type=exec), or
	// failed when the program ended before systemd saw the exec; either
	// way the unit fails, WaitActive says so, reset-failed clears it.
	if err := m.Start(ctx, failUnit); err != nil && !errors.Is(err, systemd.ErrJobFailed) {
		return err
	}
	var last systemd.UnitState
	for i := 0; i < 200 && last.ActiveState != "failed"; i++ {
		if last, err = m.State(ctx, failUnit); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	if last.ActiveState != "failed" || last.ExecMainStatus != 3 {
		return fmt.Errorf("failing unit: %v", last)
	}
	if _, err := systemd.WaitActive(ctx, m, failUnit, 10*time.Second, 50*time.Millisecond); !errors.Is(err, systemd.ErrNotActive) {
		return fmt.Errorf("WaitActive on a failed unit: %v", err)
	}
	if err := m.ResetFailed(ctx, failUnit); err != nil {
		return err
	}
	if st, err := m.State(ctx, failUnit); err != nil || st.ActiveState != "inactive" {
		return fmt.Errorf("after reset-failed: %v %v", st, err)
	}
	if err := m.Stop(ctx, "oac-testhost-none.service"); !errors.Is(err, systemd.ErrNoSuchUnit) {
		return fmt.Errorf("stop of an unknown unit: %v", err)
	}
	if err := m.ResetFailed(ctx, "oac-testhost-none.service"); !errors.Is(err, systemd.ErrNoSuchUnit) {
		return fmt.Errorf("reset-failed of an unknown unit: %v", err)
	}
	if st, err := m.State(ctx, "oac-testhost-none.service"); err != nil || st.LoadState != "not-found" {
		return fmt.Errorf("state of an unknown unit: %v %v", st, err)
	}
	return nil
}

// helperAccountsCreate creates the service account with the real
// shadow-utils adapter and checks it is adoptable.
func helperAccountsCreate(ctx context.Context) error {
	shell, err := accounts.FindNologin()
	if err != nil {
		return err
	}
	c := accounts.Commands{}
	durable := []string{"/etc/passwd", "/etc/group", "/etc"}
	synced := make([]int, len(durable))
	for i, p := range durable {
		synced[i] = syncCount(p)
	}
	if err := c.CreateServiceAccount(ctx, shell); err != nil {
		return err
	}
	for i, p := range durable {
		if synced[i] >= 0 && syncCount(p) == synced[i] {
			return fmt.Errorf("useradd's change of %s was not fsynced", p)
		}
	}
	if err := c.CreateServiceAccount(ctx, shell); !errors.Is(err, accounts.ErrExists) {
		return fmt.Errorf("second useradd: %v", err)
	}
	if _, err := accounts.Default.LookupGroup("docker"); err == nil {
		if err := c.AddToGroup(ctx, "docker"); err != nil {
			return err
		}
	}
	if err := c.AddToGroup(ctx, "oac-testhost-nogroup"); !errors.Is(err, accounts.ErrNotFound) {
		return fmt.Errorf("usermod with a missing group: %v", err)
	}
	facts, err := accounts.Default.Facts(layout.Default.Home(), -1)
	if err != nil {
		return err
	}
	if d, err := accounts.Decide(facts); err != nil || d != accounts.UseExisting {
		return fmt.Errorf("the created account is not adoptable: %v %v (%+v)", d, err, facts)
	}
	if facts.User.Shell != shell || facts.User.UID == 0 || facts.User.UID >= 1000 {
		return fmt.Errorf("created account: %+v", facts.User)
	}
	return nil
}

// helperNodeUnit installs the rendered node unit with an odd node root and
// an env file, starts it as oac-node, and checks what the program got:
// its working directory, arguments and proxy environment, exactly.
func helperNodeUnit(ctx context.Context) error {
	u, err := accounts.Default.LookupUser(layout.Account)
	if err != nil {
		return err
	}
	unit := systemd.Unit{InstallationID: nodeID, Provider: "docker", NodeRoot: oddRoot}
	bin := filepath.Join(oddRoot, "native/bin/oac-node")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	script := "#!/bin/sh\n{ pwd; printf '%s\\n' \"$@\"; env | grep -i '_proxy=' | sort; } >args.tmp && mv args.tmp args\nexec sleep infinity\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		return err
	}
	if err := os.Chown(oddRoot, u.UID, u.GID); err != nil {
		return err
	}
	text, err := unit.Render()
	if err != nil {
		return err
	}
	env, write, err := systemd.RenderEnvFile(proxy.FromEnviron([]string{"HTTPS_PROXY=" + proxyText, "no_proxy=example.com"}))
	if err != nil || !write {
		return fmt.Errorf("env file: %v %v", write, err)
	}
	if err := os.MkdirAll("/etc/oac-node", 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(layout.Default.EnvFile(nodeID), env, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(layout.Default.Unit(nodeID), text, 0o644); err != nil {
		return err
	}
	m, err := systemd.Dial(ctx)
	if err != nil {
		return err
	}
	defer m.Close()
	for _, step := range []func() error{
		func() error { return m.Reload(ctx) },
		func() error { return m.Enable(ctx, unit.Name()) },
		func() error { return m.Start(ctx, unit.Name()) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	if _, err := systemd.WaitActive(ctx, m, unit.Name(), 10*time.Second, 50*time.Millisecond); err != nil {
		return err
	}
	argsFile := filepath.Join(oddRoot, "args")
	var got []byte
	for i := 0; i < 250; i++ {
		if got, err = os.ReadFile(argsFile); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("the node program wrote nothing: %w", err)
	}
	const lo = "example.com,localhost,127.0.0.1,::1"
	want := strings.Join([]string{
		oddRoot, "run", "--config", oddRoot + "/provider.json", "--state-dir", oddRoot + "/state/node",
		"HTTPS_PROXY=" + proxyText, "NO_PROXY=" + lo, "https_proxy=" + proxyText, "no_proxy=" + lo,
	}, "\n") + "\n"
	if string(got) != want {
		return fmt.Errorf("the node program got:\n%s\nwant:\n%s", got, want)
	}
	if fi, err := os.Stat(argsFile); err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != u.UID {
		return fmt.Errorf("the node program did not run as %s: %v", layout.Account, err)
	}
	for _, step := range []func() error{
		func() error { return m.Stop(ctx, unit.Name()) },
		func() error { return m.Disable(ctx, unit.Name()) },
		func() error { return os.Remove(layout.Default.Unit(nodeID)) },
		func() error { return m.Reload(ctx) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	if err := m.ResetFailed(ctx, unit.Name()); err != nil && !errors.Is(err, systemd.ErrNoSuchUnit) {
		return err
	}
	return nil
}

// helperAccountsDelete removes what helperAccountsCreate made.
func helperAccountsDelete(ctx context.Context) error {
	c := accounts.Commands{}
	if g, err := accounts.Default.GroupNames(layout.Account); err == nil && len(g) > 0 {
		for _, name := range g {
			if err := c.RemoveFromGroup(ctx, name); err != nil {
				return err
			}
		}
	}
	if err := c.DeleteServiceAccount(ctx); err != nil {
		return err
	}
	if err := c.DeleteServiceAccount(ctx); !errors.Is(err, accounts.ErrNotFound) {
		return fmt.Errorf("second userdel: %v", err)
	}
	if _, err := accounts.Default.LookupUser(layout.Account); !errors.Is(err, accounts.ErrNotFound) {
		return fmt.Errorf("after userdel: %v", err)
	}
	return nil
}

// TestOwnEngine boots a host with a Docker Engine of its own: the host's
// /run/docker.sock answers with that engine (its data root, not the
// machine's), stops answering when the engine stops, and answers again
// after a restart, whose socket file is a new one.
func TestOwnEngine(t *testing.T) {
	h := testhost.StartWith(t, testhost.Options{InMemory: true, OwnEngine: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Logf("the host's engine answered %s after its launch", h.Engine.StartTime.Round(time.Millisecond))
	root := func() (string, int) {
		r, err := h.Exec(ctx, "curl", "-sS", "--max-time", "5", "--unix-socket", "/var/run/docker.sock", "http://docker/info")
		if err != nil {
			t.Fatal(err)
		}
		var info struct{ DockerRootDir string }
		json.Unmarshal(r.Stdout, &info)
		return info.DockerRootDir, r.Status
	}
	if dir, status := root(); status != 0 || !strings.HasPrefix(dir, filepath.Dir(h.Engine.SocketDir)+"/") {
		t.Fatalf("the engine at the host's /var/run/docker.sock: data root %q (curl exit %d), want one below %s", dir, status, filepath.Dir(h.Engine.SocketDir))
	}
	h.Engine.Stop()
	if _, status := root(); status == 0 {
		t.Fatal("the host reaches a stopped engine")
	}
	h.Engine.Restart()
	if dir, status := root(); status != 0 || dir == "" {
		t.Fatalf("after the engine's restart: data root %q (curl exit %d)", dir, status)
	}
}
