package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/openagentcore/oac-node-install/steps/record/bootstrap"
	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
)

// hostPath is PATH inside the test host.
const hostPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// exitInterrupted is the installer's exit status after SIGINT.
const exitInterrupted = 130

// errInterrupted: up stopped at a signal.
var errInterrupted = errors.New("interrupted")

// up starts the console and the test host and installs the node there.
// Each thing is recorded before it is started, so that down removes what
// an interrupted or failed up left.
func (d *demo) up(ctx context.Context) int {
	if err := d.preflight(); err != nil {
		d.fail("%v", err)
		return 1
	}
	if err := os.MkdirAll(d.state, 0o700); err != nil {
		d.fail("%v", err)
		return 1
	}
	if err := os.Chmod(d.state, 0o700); err != nil {
		d.fail("%v", err)
		return 1
	}
	l, err := d.lock()
	if err != nil {
		d.fail("%v", err)
		return 1
	}
	defer l.Unlock()
	if msg, err := d.alreadyUp(); err != nil || msg != "" {
		if err != nil {
			msg = err.Error()
		}
		d.fail("%s", msg)
		return 1
	}
	code, err := d.doUp(ctx)
	switch {
	case errors.Is(err, errInterrupted) || ctx.Err() != nil:
		d.fail("interrupted; `%s` removes what was started", d.downCommand())
		return exitInterrupted
	case err != nil:
		d.fail("%v", err)
		d.fail("what was started stays for inspection (state in %s); `%s` removes it", d.state, d.downCommand())
		return 1
	}
	return code
}

// preflight checks what up needs besides root.
func (d *demo) preflight() error {
	if err := testhost.CheckMachine(); err != nil {
		return err
	}
	for _, name := range []string{"oac-node-install", "oac-devcore", "oac-node-dev"} {
		if st, err := os.Stat(d.binary(name)); err != nil || !st.Mode().IsRegular() {
			return fmt.Errorf("no %s in %s: build the binaries first (make build)", name, d.bin)
		}
	}
	for _, tool := range []string{"docker", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("needs %s", tool)
		}
	}
	if _, err := docker("version", "--format", "{{.Server.Version}}"); err != nil {
		return fmt.Errorf("needs a running Docker Engine: %v", err)
	}
	return nil
}

// alreadyUp says why up must not start: a demo that is up, or one that a
// previous up left part-way.
func (d *demo) alreadyUp() (string, error) {
	st, err := d.loadState()
	if err != nil {
		return "", err
	}
	hosts, err := testhost.FindDetached(d.state)
	if err != nil {
		return "", err
	}
	if st == nil && len(hosts) == 0 {
		return "", nil
	}
	if st != nil && st.Phase == phaseUp && st.Devcore.running() && len(hosts) == 1 {
		if h, err := testhost.OpenDetached(hosts[0]); err == nil && h.Running() {
			return fmt.Sprintf("the demo is already up: console %s, test host PID 1 is pid %d (nsenter -t %d -a); `%s` removes it",
				st.Devcore.URL, h.PID, h.PID, d.downCommand()), nil
		}
	}
	return fmt.Sprintf("a previous demo in %s is partly up or was interrupted; run `%s` first", d.state, d.downCommand()), nil
}

func (d *demo) doUp(ctx context.Context) (int, error) {
	began := time.Now()
	snap, err := testhost.TakeSnapshot()
	if err != nil {
		return 0, err
	}
	st := &state{Phase: phaseStarting, Snapshot: snap}
	if err := d.saveState(st); err != nil {
		return 0, err
	}

	d.step("start the development console and Core stand-in (oac-devcore)")
	if err := d.startDevcore(ctx, st); err != nil {
		return 0, d.interrupted(ctx, err)
	}
	c := st.Devcore
	d.say("%s (CA %s), installation %s; pid %d, log %s", c.URL, c.CA, c.InstallationID, c.PID, d.statePath(devcoreLog))
	if err := d.recordImage(st); err != nil {
		return 0, err
	}
	if ctx.Err() != nil {
		return 0, errInterrupted
	}

	d.step("boot the test host: systemd as PID 1 of private namespaces, private /etc, /var/lib and /run, this machine's Docker Engine")
	h, err := testhost.BootDetached(d.state)
	if err != nil {
		return 0, d.interrupted(ctx, err)
	}
	d.say("systemd is pid %d on this machine (enter with: nsenter -t %d -a); booted in %s", h.PID, h.PID, h.BootTime.Round(time.Millisecond))
	d.say("copies of /etc and /var/lib in %s; cgroups %s", h.Dir, strings.Join(h.Cgroups, ", "))
	if ctx.Err() != nil {
		return 0, errInterrupted
	}
	home := d.statePath(homeDir)
	if err := os.MkdirAll(home, 0o700); err != nil {
		return 0, err
	}

	d.step("create an enrollment token (oac-devcore admin token) and generate the bootstrap command as Web does (oac-node-install command)")
	script, sha, err := d.bootstrapCommand(ctx, c)
	if err != nil {
		return 0, d.interrupted(ctx, err)
	}
	if ctx.Err() != nil {
		return 0, errInterrupted
	}

	st.Installing = true
	if err := d.saveState(st); err != nil {
		return 0, err
	}
	d.step("paste the command into a root shell of the test host (bash reads it on standard input; the token is in no argument)")
	status, err := d.hostRun(h, home, strings.NewReader(script), "bash")
	if err != nil {
		return 0, err
	}
	if ctx.Err() != nil || status == exitInterrupted {
		// The installer may see Ctrl-C and end before this process does.
		return 0, errInterrupted
	}
	if status != 0 {
		return 0, fmt.Errorf("the bootstrap command exited %d", status)
	}

	installer := filepath.Join(home, ".oac", "node-bootstrap", sha)
	rerun := []string{installer, "--source-url", c.URL, "--core-url", c.URL, "--provider", "docker",
		"--installation-id", c.InstallationID, "--core-ca", c.CA}
	d.step("rerun the installer for the registered node, without a token: nothing changes")
	fmt.Fprintf(d.out, "# %s\n", strings.Join(rerun, " "))
	if status, err = d.hostRun(h, home, nil, rerun...); err != nil {
		return 0, err
	}
	if ctx.Err() != nil || status == exitInterrupted {
		return 0, errInterrupted
	}
	if status != 0 {
		return 0, fmt.Errorf("the rerun exited %d", status)
	}

	d.step("oac-node-install status")
	fmt.Fprintf(d.out, "# %s status\n", installer)
	if status, err = d.hostRun(h, home, nil, installer, "status"); err != nil {
		return 0, err
	}
	if ctx.Err() != nil {
		return 0, errInterrupted
	}
	st.Phase = phaseUp
	if err := d.saveState(st); err != nil {
		return 0, err
	}
	d.step("the demo is up (%s)", time.Since(began).Round(100*time.Millisecond))
	d.say("console:        %s (CA %s)", c.URL, c.CA)
	d.say("Core's nodes:   %s admin --data %s nodes", d.binary("oac-devcore"), c.Data)
	d.say("the test host:  nsenter -t %d -a   (then: systemctl status oac-node-%s.service)", h.PID, c.InstallationID)
	if d.state == DefaultState {
		d.say("remove it all:  make demo-uninstall   (%s down)", d.binary("oac-demo"))
	} else {
		d.say("remove it all:  %s", d.downCommand())
	}
	if status != 0 {
		return 1, fmt.Errorf("status exited %d after the installation", status)
	}
	return 0, nil
}

// interrupted returns errInterrupted when err came from a signal.
func (d *demo) interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return errInterrupted
	}
	return err
}

// recordImage records the Runtime image the console's release holds and
// whether the engine has it already.
func (d *demo) recordImage(st *state) error {
	id, err := image.Identify(filepath.Join(st.Devcore.Data, "build", "runtime.tar"))
	if err != nil {
		return fmt.Errorf("the console's Runtime image: %w", err)
	}
	img := &imageState{IDs: []string{id.ConfigDigest, id.ManifestDigest}}
	for _, ref := range img.IDs {
		if _, err := docker("image", "inspect", "--format", "{{.Id}}", ref); err == nil {
			img.Existed = true
		} else if !isNotExist(err) {
			return err
		}
	}
	st.Image = img
	return d.saveState(st)
}

// bootstrapCommand creates a token and renders the install command with
// `oac-node-install command`, the token on its standard input.
func (d *demo) bootstrapCommand(ctx context.Context, c *devcoreState) (script, sha string, err error) {
	token, err := d.admin(c, "token")
	if err != nil {
		return "", "", err
	}
	token = bytes.TrimSpace(token)
	if sha, err = installerSHA256(ctx, c); err != nil {
		return "", "", err
	}
	var stderr bytes.Buffer
	cmd := exec.Command(d.binary("oac-node-install"), "command", "--console", c.URL, "--core-url", c.URL,
		"--installation-id", c.InstallationID, "--provider", "docker", "--sha256", sha, "--core-ca", c.CA, "--token-stdin")
	cmd.Stdin = bytes.NewReader(append(token, '\n'))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("oac-node-install command: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	script = string(out)
	// What the operator pastes, without the token (the output may be
	// kept in a log).
	shown := strings.ReplaceAll(script, bootstrap.Quote(string(token)), "'<enrollment token>'")
	shown = strings.ReplaceAll(shown, string(token), "<enrollment token>")
	for _, l := range strings.Split(strings.TrimRight(shown, "\n"), "\n") {
		fmt.Fprintf(d.out, "  | %s\n", l)
	}
	return script, sha, nil
}

// hostRun runs argv as root in the test host with the operator's HOME,
// printing its output as it comes; it returns the exit status. The
// command is in this process's group, so Ctrl-C reaches it as it reaches
// a pasted command.
func (d *demo) hostRun(h *testhost.Detached, home string, stdin io.Reader, argv ...string) (int, error) {
	cmd := h.Command(context.Background(), argv...)
	cmd.Env = []string{"HOME=" + home, "PATH=" + hostPath, "LANG=C.UTF-8", "USER=root", "LOGNAME=root"}
	for _, k := range []string{"TERM", "NO_COLOR"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	if stdin != nil {
		cmd.Stdin = stdin
	}
	cmd.Stdout, cmd.Stderr = d.out, d.errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if exit.ExitCode() >= 0 {
			return exit.ExitCode(), nil
		}
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return 1, nil
	}
	if err != nil {
		return 0, fmt.Errorf("run %s in the test host: %w", argv[0], err)
	}
	return 0, nil
}
