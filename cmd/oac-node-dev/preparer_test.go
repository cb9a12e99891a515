package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/devcore"
	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/nodeproto"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/launcher"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
)

// fakePreparer records each call with its process group, fails one
// preparation with exit 65 while the file fail65 exists, and records
// whether a collection could lock generation 1's lease exclusively, as the
// real collector does.
const fakePreparer = `#!/bin/sh
d=$(dirname "$0")
read -r _ _ _ _ pgid _ < /proc/$$/stat
printf '%s pgid=%s pid=%s\n' "$*" "$pgid" "$$" >> "$d/calls"
case "$*" in *"--generation-action prepare"*)
  if [ -e "$d/fail65" ]; then rm "$d/fail65"; echo 'artifact transfer failed' >&2; exit 65; fi;;
*"--generation-action collect --generation 1 "*)
  if flock -n -x "$d/state/node/generations/1.lease" true; then echo free > "$d/collect-lease"; else echo busy > "$d/collect-lease"; fi;;
esac
exit 0
`

func TestRunPreparesAndCollectsGenerations(t *testing.T) {
	e := newEnv(t)
	if code, _, stderr := e.register(t, e.tokenFile(t)); code != 0 {
		t.Fatal(stderr)
	}
	id := e.identity(t)
	needPython(t)
	writePreparer(t, e.root, fakePreparer)
	if err := os.WriteFile(filepath.Join(e.root, "fail65"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Generation 1's lease, as the installation leaves it.
	leases := filepath.Join(e.state, "generations")
	if err := os.MkdirAll(leases, 0o700); err != nil {
		t.Fatal(err)
	}
	g1 := lease.Identity{InstallationID: id.Identity.InstallationID, Generation: 1, SpecificationDigest: id.Identity.SpecificationDigest}
	l, err := lease.Initialize(leases, g1, os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	n := e.run(t)
	e.waitNode(t, id.Identity.NodeID, func(v devcore.NodeView) bool { return v.Online })
	// The node holds a shared reference on the generation it serves: an
	// exclusive lock is refused.
	if l, err = lease.Open(leases, g1, os.Getuid()); err != nil {
		t.Fatal(err)
	}
	if err := l.TryExclusive(); !errors.Is(err, lease.ErrHelperActive) {
		t.Errorf("generation 1's lease while the node serves it: %v, want %v", err, lease.ErrHelperActive)
	}
	l.Close()

	var g2 devcore.GenerationView
	if st := e.admin(t, "POST", "/core/v1/sandbox/deployment/generations", &g2); st != 201 {
		t.Fatalf("publish: HTTP %d", st)
	}
	// The first preparation fails with 65: runtime_download_failed; the
	// retry succeeds and the node serves generation 2.
	e.waitNode(t, id.Identity.NodeID, func(v devcore.NodeView) bool { return v.Rollout.Diagnostic == diagRuntimeDownloadFailed })
	e.waitNode(t, id.Identity.NodeID, func(v devcore.NodeView) bool { return v.Rollout.ServingGeneration == 2 })

	if st := e.admin(t, "POST", "/core/v1/sandbox/deployment/generations/1/drop", nil); st != 200 {
		t.Fatalf("drop: HTTP %d", st)
	}
	v := e.waitNode(t, id.Identity.NodeID, func(v devcore.NodeView) bool {
		for _, o := range v.Rollout.Generations {
			if o.Generation == 1 {
				return false
			}
		}
		return true
	})
	if len(v.Rollout.Generations) != 1 || v.Rollout.Generations[0] != (nodeproto.Observation{Generation: 2, SpecificationDigest: g2.SpecificationDigest, State: nodeproto.StateReady}) {
		t.Fatalf("observations %+v", v.Rollout.Generations)
	}

	data, err := os.ReadFile(filepath.Join(e.root, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	calls := strings.Split(strings.TrimSpace(string(data)), "\n")
	prefix := "--installation-id " + id.Identity.InstallationID.String() + " --generation-action "
	want := []string{
		prefix + "prepare --generation 2 --specification-digest " + g2.SpecificationDigest,
		prefix + "prepare --generation 2 --specification-digest " + g2.SpecificationDigest,
		prefix + "collect --generation 1 --specification-digest " + id.Identity.SpecificationDigest,
	}
	if len(calls) != len(want) {
		t.Fatalf("calls:\n%s", data)
	}
	group := regexp.MustCompile(` pgid=(\d+) pid=(\d+)$`)
	for i, c := range calls {
		m := group.FindStringSubmatch(c)
		if m == nil || m[1] != m[2] {
			t.Errorf("call %q did not run in its own process group", c)
		}
		if got := group.ReplaceAllString(c, ""); got != want[i] {
			t.Errorf("call %d: %q, want %q", i, got, want[i])
		}
	}
	// The node let go of generation 1's lease before its collection.
	if data, err := os.ReadFile(filepath.Join(e.root, "collect-lease")); err != nil || string(data) != "free\n" {
		t.Errorf("generation 1's lease during its collection: %q %v, want free", data, err)
	}
	if strings.Contains(n.log.String(), "generation 1: no shared lease reference") {
		t.Errorf("the node took no reference on generation 1: %s", n.log.String())
	}
	if !strings.Contains(n.log.String(), "artifact transfer failed") {
		t.Errorf("the helper's stderr did not reach the node's: %q", n.log.String())
	}
	// Each call went through the launcher, as the platform's node program
	// makes it.
	pyz := filepath.Join(e.root, layout.HelperLauncherFile)
	for _, line := range []string{
		"oac-node-dev: multi-generation mode: generations are prepared and collected by python3 " + pyz + "\n",
		"python3 " + pyz + " " + want[0] + "\n",
		"python3 " + pyz + " " + want[2] + "\n",
	} {
		if !strings.Contains(n.log.String(), line) {
			t.Errorf("the node's log lacks %q:\n%s", line, n.log.String())
		}
	}
}

// needPython gives the test the PATH systemd gives the node's unit, and
// skips a test that runs the helper launcher when python3 is not on it.
func needPython(t *testing.T) {
	t.Helper()
	t.Setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3: the node runs the generation helper's launcher with it")
	}
}

// writePreparer lays out the retained helper as the installation does: the
// helper (here a script) and its launcher generation-preparer.pyz.
func writePreparer(t *testing.T, root, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, layout.HelperFile), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, layout.HelperLauncherFile), launcher.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Without generation-preparer.pyz the node is a single-generation node,
// as the platform's node program: it reports no generation management and
// never runs the helper, even the 0700 generation-preparer beside it, when
// Core publishes a generation.
func TestRunWithoutTheLauncherIsSingleGeneration(t *testing.T) {
	e := newEnv(t)
	if code, _, stderr := e.register(t, e.tokenFile(t)); code != 0 {
		t.Fatal(stderr)
	}
	id := e.identity(t)
	writePreparer(t, e.root, fakePreparer)
	if err := os.Remove(filepath.Join(e.root, layout.HelperLauncherFile)); err != nil {
		t.Fatal(err)
	}
	n := e.run(t)
	e.waitNode(t, id.Identity.NodeID, func(v devcore.NodeView) bool { return v.Online })
	var g2 devcore.GenerationView
	if st := e.admin(t, "POST", "/core/v1/sandbox/deployment/generations", &g2); st != 201 {
		t.Fatalf("publish: HTTP %d", st)
	}
	// Heartbeats go every 20 ms here: a hundred of them after Core knows
	// generation 2, none reports it and no helper ran.
	v := e.waitNode(t, id.Identity.NodeID, func(v devcore.NodeView) bool { return v.Rollout.TargetGeneration == 2 })
	time.Sleep(2 * time.Second)
	v = e.waitNode(t, id.Identity.NodeID, func(v devcore.NodeView) bool { return v.Online })
	if len(v.Rollout.Generations) != 0 {
		t.Errorf("a single-generation node reported generations %+v", v.Rollout.Generations)
	}
	if _, err := os.Stat(filepath.Join(e.root, "calls")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the helper ran without the launcher: %v", err)
	}
	if strings.Contains(n.log.String(), "multi-generation") || strings.Contains(n.log.String(), "python3") {
		t.Errorf("the node's log:\n%s", n.log.String())
	}
}

// Something other than a 0600 regular file named generation-preparer.pyz
// stops run before it connects (exit 1), as it stops the platform's node
// program: a launcher of another mode, a link to a good one, a directory.
func TestRunRefusesALauncherThatIsNotPrivate(t *testing.T) {
	e := newEnv(t)
	if code, _, stderr := e.register(t, e.tokenFile(t)); code != 0 {
		t.Fatal(stderr)
	}
	pyz := filepath.Join(e.root, layout.HelperLauncherFile)
	good := filepath.Join(t.TempDir(), layout.HelperLauncherFile)
	if err := os.WriteFile(good, launcher.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		plant func() error
	}{
		{"mode 0644", func() error { return os.WriteFile(pyz, launcher.Bytes(), 0o644) }},
		{"mode 0700", func() error { return os.WriteFile(pyz, launcher.Bytes(), 0o700) }},
		{"a symbolic link", func() error { return os.Symlink(good, pyz) }},
		{"a directory", func() error { return os.Mkdir(pyz, 0o700) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.RemoveAll(pyz)
			if err := c.plant(); err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			code := run(ctx, []string{"run", "--config", e.config, "--state-dir", e.state}, io.Discard, &stderr)
			if code != exitError || !strings.Contains(stderr.String(), "must be a private regular file (0600)") {
				t.Errorf("exit %d, stderr %q; want %d and the launcher refused", code, stderr.String(), exitError)
			}
		})
	}
}

// groupPreparer prints its arguments, starts a child in its process group
// that writes its pid to $d/child and lives a minute, and then waits a
// minute itself unless the action is prepare.
const groupPreparer = `#!/bin/sh
d=$(dirname "$0")
printf '%s\n' "$*" > "$d/args"
case "$*" in *"--generation-action prepare"*) exit 0;; esac
sh -c 'echo $$ > "$1/child.tmp" && mv "$1/child.tmp" "$1/child"; exec sleep 60' sh "$d" &
sleep 60
`

// runHelper passes --allow-insecure-origin only for a node whose identity
// allows an insecure origin, and ending its context kills the helper's
// whole process group (the launcher's process is the helper's), a child
// it started included.
func TestRunHelperArgumentsAndGroupKill(t *testing.T) {
	needPython(t)
	root := t.TempDir()
	writePreparer(t, root, groupPreparer)
	id := ident.InstallationID("0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c")
	digest := strings.Repeat("c", 64)
	for _, insecure := range []bool{false, true} {
		var log strings.Builder
		g := &generations{helper: filepath.Join(root, layout.HelperLauncherFile), installationID: id, insecure: insecure, log: &syncWriter{w: &log}}
		if err := g.runHelper(context.Background(), "prepare", 3, digest); err != nil {
			t.Fatalf("prepare: %v\n%s", err, log.String())
		}
		want := "--installation-id " + id.String() + " --generation-action prepare --generation 3 --specification-digest " + digest
		if insecure {
			want += " --allow-insecure-origin"
		}
		if got, _ := os.ReadFile(filepath.Join(root, "args")); string(got) != want+"\n" {
			t.Errorf("insecure %v: helper arguments %q, want %q", insecure, got, want)
		}
	}

	g := &generations{helper: filepath.Join(root, layout.HelperLauncherFile), installationID: id, log: io.Discard}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.runHelper(ctx, "collect", 1, digest) }()
	var child int
	for deadline := time.Now().Add(time.Minute); child == 0; time.Sleep(10 * time.Millisecond) {
		if data, err := os.ReadFile(filepath.Join(root, "child")); err == nil {
			child, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		} else if time.Now().After(deadline) {
			t.Fatal("the helper's child never started")
		}
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a cancelled collect reported success")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("runHelper did not return after its context ended")
	}
	for deadline := time.Now().Add(10 * time.Second); alive(child); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("the helper's child %d outlived the cancelled collect: the group was not killed", child)
		}
	}
}

// alive reports whether process pid exists and is not a zombie (an orphan
// waits for whoever adopted it to reap it).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	return i < 0 || !strings.HasPrefix(string(data[i:]), ") Z")
}

// syncWriter serializes writes from the helper's two output pipes.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
