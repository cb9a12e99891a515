package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// TestRerunOnATerminalChild is the command on a terminal for
// TestRerunRefusalsOnATerminal: OAC_RERUN_HOST is the host root and
// OAC_RERUN_ARGS the arguments, separated by \x1f.
func TestRerunOnATerminalChild(t *testing.T) {
	root := os.Getenv("OAC_RERUN_HOST")
	if root == "" {
		t.Skip("skip: run by TestRerunRefusalsOnATerminal")
	}
	c := &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, hostRoot: root}
	os.Exit(c.run(strings.Split(os.Getenv("OAC_RERUN_ARGS"), "\x1f")))
}

// TestRerunRefusalsOnATerminal: what an operator sees in a terminal when a
// rerun's flag differs from root's record (the difference and the short
// command), and when --core-ca names a file root cannot safely read (the
// component, and a copy root makes), never advice to run a command as the
// service account; nothing of root's changes.
func TestRerunRefusalsOnATerminal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: the bookkeeping and root's CA copy are files of root's, and a user's directory needs chown")
	}
	const id = ident.InstallationID("0b8e2f1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b")
	const pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
	sum := sha256.Sum256([]byte(pem))
	h := layout.Host{Root: t.TempDir()}
	must(t, os.MkdirAll(h.EtcDir(), 0o755))
	db, err := bookkeeping.Open(h.Bookkeeping())
	must(t, err)
	must(t, db.PutInstallation(bookkeeping.Installation{ID: id, Provider: "docker", CoreURL: "https://core.example.com", NodeRoot: h.NodeRoot(id),
		Unit: h.Unit(id), EnvFile: h.EnvFile(id), CoreCA: hex.EncodeToString(sum[:]), SourceURL: "https://console.example.com", Registered: true}))
	must(t, db.Close())
	must(t, os.WriteFile(hostrecord.CoreCACopy(h, id), []byte(pem), 0o644))
	userDir := filepath.Join(t.TempDir(), "home-of-a-user")
	must(t, os.Mkdir(userDir, 0o755))
	must(t, os.WriteFile(filepath.Join(userDir, "ca.pem"), []byte(pem), 0o644))
	must(t, os.Chown(userDir, 65534, 65534))
	other := "1c9f3a2b-4d5e-4f60-9b1c-2d3e4f5a6b7c"

	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"a flag that differs", []string{"--installation-id", string(id), "--core-url", "https://core2.example.com"}, []string{
			"was installed with --core-url https://core.example.com, but this command says --core-url https://core2.example.com",
			"`sudo oac-node-install --installation-id " + string(id) + "`"}},
		{"an unrecorded installation", []string{"--installation-id", other}, []string{
			"this host does not record installation " + other, "run the full command Web generated"}},
		{"--core-ca in a user's directory", []string{"--source-url", "https://console.example.com", "--core-url", "https://core.example.com",
			"--core-ca", filepath.Join(userDir, "ca.pem"), "--installation-id", other}, []string{
			"home-of-a-user is owned by uid 65534", "sudo install -m 0644 <file> /root/core-ca.pem", "Nothing was changed."}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, err := os.ReadFile(h.Bookkeeping())
			must(t, err)
			master, slave := openPTY(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestRerunOnATerminalChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "OAC_RERUN_HOST="+h.Root, "OAC_RERUN_ARGS="+strings.Join(c.args, "\x1f"), "TERM=xterm")
			cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			must(t, cmd.Start())
			slave.Close()
			var screen timedBuffer
			go screen.copyFrom(master)
			err = cmd.Wait()
			out := screen.settled()
			t.Logf("%s (%v):\n%s", strings.Join(c.args, " "), err, out)
			if err == nil {
				t.Errorf("the command succeeded")
			}
			flat := strings.Join(strings.Fields(out), " ")
			for _, want := range c.want {
				if !strings.Contains(flat, want) {
					t.Errorf("the terminal lacks %q", want)
				}
			}
			if unsafeAdvice.MatchString(out) || strings.Contains(out, h.Home()) {
				t.Errorf("the terminal shows advice root cannot safely follow")
			}
			after, err := os.ReadFile(h.Bookkeeping())
			if err != nil || !bytes.Equal(before, after) {
				t.Errorf("the bookkeeping changed: %v", err)
			}
		})
	}
}
