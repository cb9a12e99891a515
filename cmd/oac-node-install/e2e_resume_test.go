//go:build e2e

package main

import (
	"bytes"
	"fmt"
	"github.com/openagentcore/oac-node-install/workflow/crashharness"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An install interrupted (SIGINT) after Core enrolled the node ends with
// 130, naming the install command without a token; status then names the
// same command, from root's host record, with the console URL left to the
// operator and the node's copy of the Core CA; that command, run as named
// with the console URL filled in, completes the installation, and status
// says ok.
func TestEndToEndInterruptedInstallNamesTheCommandThatContinuesIt(t *testing.T) {
	r := newCrashRig(t)
	var pts []crashharness.Point
	t.Run("uninterrupted", func(t *testing.T) {
		h := r.boot(t)
		count := filepath.Join(r.tmp, "install-pause-points")
		if res := h.install(t, "OAC_PAUSE_COUNT="+count); res.status != 0 {
			t.Fatalf("uninterrupted install: %s", res)
		}
		pts = crashharness.Points(t, count, filepath.Join(h.journalDir(), "install.journal"))
	})
	var at *crashharness.Point
	for i := range pts {
		if pts[i].State == "env_file" {
			at = &pts[i]
			break
		}
	}
	if at == nil {
		t.Fatalf("no point in the env_file step, the first after register: %s", crashharness.PointMap(pts))
	}

	h := r.boot(t)
	dir, err := os.MkdirTemp(r.tmp, "pause-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	token := r.core.admin(t, "token")
	h.firstToken, h.tokens = time.Now(), []string{token}
	pauseDir := "OAC_PAUSE_DIR=" + dir
	install := h.start(t, "install", []string{fmt.Sprintf("OAC_PAUSE_AT=%d", at.N), pauseDir}, token, r.installArgs()...)
	if got := waitPaused(t, install, dir); got != at.Name {
		t.Fatalf("the install paused at %q, want %s", got, at)
	}
	pid := pausedInstaller(t, r.bin, pauseDir)
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res := install.wait(t, 4*time.Minute)
	// Root's records hold what the install was given (its source and a
	// copy of its Core CA): the command that continues it is the short one.
	named := "sudo " + filepath.Join(r.bin, "oac-node-install") + " --installation-id " + r.core.installationID
	if res.status != 130 || !strings.Contains(res.out, "Interrupted. Nothing is lost: to continue, run `"+named+"`") {
		t.Errorf("the interrupted install: %s\nwant exit 130 naming %q", res, named)
	}
	if strings.Contains(res.out, token) {
		t.Fatal("the interrupted install printed the token")
	}

	st := h.run(t, nil, "", "status")
	next := nextLine.FindStringSubmatch(st.out)
	if st.status != 2 || next == nil {
		t.Fatalf("status after the interruption: %s", st)
	}
	_, cmd, ok := strings.Cut(next[1], ": sudo oac-node-install ")
	if !ok || cmd != "--installation-id "+r.core.installationID {
		t.Fatalf("status names no install command without a token: %s", st)
	}
	args := strings.Fields(strings.Replace(cmd, "<console URL>", r.core.url, 1))
	t.Logf("status names: %s", next[1])
	if res := h.run(t, nil, "", args...); res.status != 0 {
		t.Fatalf("the command status names: %s", res)
	}
	if st := h.run(t, nil, "", "status"); st.status != 0 {
		t.Fatalf("status after the command it named: %s", st)
	}
	if n := len(r.nodes(t)); n != 1 {
		t.Errorf("Core enrolled %d nodes, want 1", n)
	}
	h.secrets(t, "interrupted install")
}

// pausedInstaller is the pid of the installer (argv[0] bin's) started with
// the environment entry pauseDir (OAC_PAUSE_DIR=…), which only that run
// has: its service-account children get an environment of their own.
func pausedInstaller(t *testing.T, bin, pauseDir string) int {
	t.Helper()
	exe := filepath.Join(bin, "oac-node-install")
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		argv, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !bytes.HasPrefix(argv, []byte(exe+"\x00")) {
			continue
		}
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil || !bytes.Contains(append(append([]byte{0}, env...), 0), []byte("\x00"+pauseDir+"\x00")) {
			continue
		}
		var pid int
		fmt.Sscan(filepath.Base(p), &pid)
		return pid
	}
	t.Fatalf("no installer with %s runs", pauseDir)
	return 0
}
