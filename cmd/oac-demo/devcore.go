package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
)

// devcoreStartTimeout bounds the wait for the console to serve (it builds
// the fixture release first).
const devcoreStartTimeout = 3 * time.Minute

// The console's start lines in its log; each pattern ends in text after
// the value, so that a line read half-written does not match.
var (
	servingLine      = regexp.MustCompile(`oac-devcore: serving (https://\S+) \(CA (\S+)\)`)
	installationLine = regexp.MustCompile(`Core stand-in for installation ([0-9a-f-]{36}) \(`)
)

// startDevcore starts the console in a session of its own with its output
// in the state directory, records it, and waits until it serves.
func (d *demo) startDevcore(ctx context.Context, st *state) error {
	log, err := os.OpenFile(d.statePath(devcoreLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	data := d.statePath(devcoreData)
	cmd := exec.Command(d.binary("oac-devcore"), "--data", data, "--listen", "127.0.0.1:0",
		"--installer", d.binary("oac-node-install"), "--node-program", d.binary("oac-node-dev"))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start oac-devcore: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	start, _ := testhost.ProcessStart(cmd.Process.Pid)
	st.Devcore = &devcoreState{PID: cmd.Process.Pid, Start: start, Data: data}
	if err := d.saveState(st); err != nil {
		return err
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(devcoreStartTimeout)
	for {
		b, _ := os.ReadFile(d.statePath(devcoreLog))
		m, id := servingLine.FindSubmatch(b), installationLine.FindSubmatch(b)
		if m != nil && id != nil {
			st.Devcore.URL, st.Devcore.CA, st.Devcore.InstallationID = string(m[1]), string(m[2]), string(id[1])
			return d.saveState(st)
		}
		select {
		case err := <-exited:
			return fmt.Errorf("oac-devcore exited (%v) before serving:\n%s", err, b)
		case <-deadline:
			return fmt.Errorf("oac-devcore did not serve within %s:\n%s", devcoreStartTimeout, b)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// running reports whether the recorded console is still the process up
// started.
func (c *devcoreState) running() bool {
	if c == nil || c.PID <= 0 {
		return false
	}
	start, ok := testhost.ProcessStart(c.PID)
	return ok && start == c.Start
}

// stopDevcore ends the recorded console: SIGTERM (it stops cleanly), then
// SIGKILL when it has not ended after a while.
func stopDevcore(c *devcoreState) error {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if !c.running() {
			return nil
		}
		syscall.Kill(c.PID, sig)
		for i := 0; i < 200 && c.running(); i++ {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if c.running() {
		return fmt.Errorf("oac-devcore (pid %d) did not end after SIGKILL", c.PID)
	}
	return nil
}

// strayDevcores lists the consoles serving data other than the recorded
// one: started by an up killed before it recorded them (their command
// line names the data directory).
func strayDevcores(data string, recorded *devcoreState) []*devcoreState {
	var found []*devcoreState
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil || (recorded != nil && pid == recorded.PID) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		if len(argv) < 3 || filepath.Base(argv[0]) != "oac-devcore" || argv[1] != "--data" || argv[2] != data {
			continue
		}
		if start, ok := testhost.ProcessStart(pid); ok {
			found = append(found, &devcoreState{PID: pid, Start: start, Data: data})
		}
	}
	return found
}

// admin runs `oac-devcore admin --data DIR args…` and returns its output.
func (d *demo) admin(c *devcoreState, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(d.binary("oac-devcore"), append([]string{"admin", "--data", c.Data}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("oac-devcore admin %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// nodeIDs lists the nodes Core knows.
func (d *demo) nodeIDs(c *devcoreState) ([]string, error) {
	out, err := d.admin(c, "nodes")
	if err != nil {
		return nil, err
	}
	var listed struct {
		Nodes []struct {
			NodeID string `json:"node_id"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(out, &listed); err != nil {
		return nil, fmt.Errorf("oac-devcore admin nodes: %w", err)
	}
	var ids []string
	for _, n := range listed.Nodes {
		ids = append(ids, n.NodeID)
	}
	return ids, nil
}

// installerSHA256 reads the installer's sha256 from the console's
// published SHA256SUMS, as Web does when it renders the command.
func installerSHA256(ctx context.Context, c *devcoreState) (string, error) {
	pem, err := os.ReadFile(c.CA)
	if err != nil {
		return "", err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return "", fmt.Errorf("%s holds no certificate", c.CA)
	}
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+"/node-install/SHA256SUMS", nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: HTTP %d", req.URL, resp.StatusCode)
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 1<<20))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && strings.TrimPrefix(f[1], "*") == release.InstallerName {
			return f[0], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("GET %s: no line for %s", req.URL, release.InstallerName)
}

// docker runs the docker CLI; exit status 1 with "No such" on stderr is
// ErrNotExist.
func docker(args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.Command("docker", args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "No such") || strings.Contains(msg, "not found") {
			return "", fmt.Errorf("docker %s: %s: %w", args[0], msg, os.ErrNotExist)
		}
		return "", fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, msg)
	}
	return strings.TrimSpace(string(out)), nil
}

func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
