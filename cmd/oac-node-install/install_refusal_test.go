package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/systemd"
)

// The install command's own refusals come before it reads the host (the
// token's own refusals come after the host checks that need no token:
// install.TestBadTokensRefuseBeforeTheLock): each
// leaves the host root as it was (empty), exits 1 and says that nothing
// was changed.
func TestInstallCommandRefusalsChangeNothing(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644)
	base := []string{"--source-url", "https://console.example.com", "--core-url", "https://core.example.com",
		"--provider", "docker", "--installation-id", "0b6c1f0e-5d1a-4c8e-9a7b-3f2d1e0c9b8a"}
	cases := []struct {
		name  string
		env   map[string]string
		stdin string
		args  []string
		want  string
	}{
		{name: "token in the environment", env: map[string]string{"OAC_ENROLLMENT_TOKEN": "x"}, stdin: "tok\n",
			args: []string{"--enrollment-token-stdin"}, want: "OAC_ENROLLMENT_TOKEN"},
		{name: "missing Core CA file", stdin: "tok\n", args: []string{"--enrollment-token-stdin", "--core-ca", filepath.Join(dir, "none.pem")}, want: "--core-ca"},
		{name: "Core CA without a certificate", stdin: "tok\n", args: []string{"--enrollment-token-stdin", "--core-ca", notPEM}, want: "no PEM certificate"},
		{name: "proxy that does not parse", env: map[string]string{"HTTPS_PROXY": "http://[::1", "https_proxy": "http://[::1"}, stdin: "tok\n",
			args: []string{"--enrollment-token-stdin"}, want: "proxy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			host := t.TempDir()
			code, stdout, stderr := runWithInput(t, host, tc.stdin, append(append([]string{}, base...), tc.args...)...)
			msg := strings.TrimSpace(stderr)
			want := tc.want
			if os.Geteuid() != 0 {
				want = "requires root"
			}
			if code != 1 || !strings.HasSuffix(msg, "Nothing was changed.") || !strings.Contains(msg, want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want a refusal saying %q", code, stdout, stderr, want)
			}
			if names, err := readDirNames(host); err != nil || len(names) != 0 {
				t.Errorf("the host root holds %v (%v)", names, err)
			}
		})
	}
}

// On a host where systemd answers neither on the system bus nor on its
// private socket, install and uninstall say plainly that the host does not
// run systemd, then the connection's detail, and that nothing was changed.
func TestNoSystemdRefusal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: install and uninstall refuse to run without it before they reach systemd")
	}
	old := dialManager
	dialManager = func(context.Context) (*systemd.DBus, error) {
		return nil, fmt.Errorf("connect to systemd (system bus: dial unix /run/dbus/system_bus_socket: no such file or directory; /run/systemd/private: no such file or directory): %w", systemd.ErrUnavailable)
	}
	t.Cleanup(func() { dialManager = old })
	const detail = "this host does not run systemd (nodes run as systemd services; use a host booted with systemd): connect to systemd (system bus: dial unix /run/dbus/system_bus_socket: no such file or directory; /run/systemd/private: no such file or directory): systemd is not reachable over D-Bus. Nothing was changed.\n"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"install", []string{"--source-url", "https://console.example.com", "--core-url", "https://core.example.com",
			"--provider", "docker", "--installation-id", testID}, prefixInstall + detail},
		{"uninstall", []string{"--uninstall", "--installation-id", testID}, prefixUninstall + detail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := t.TempDir()
			code, stdout, stderr := runOn(t, host, tc.args...)
			if code != exitFailure || stderr != tc.want {
				t.Errorf("exit %d, want %d\nstdout: %q\nstderr: %q\nwant:   %q", code, exitFailure, stdout, stderr, tc.want)
			}
			if names, err := readDirNames(host); err != nil || len(names) != 0 {
				t.Errorf("the host root holds %v (%v)", names, err)
			}
		})
	}
}
