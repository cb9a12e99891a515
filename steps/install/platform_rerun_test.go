package install

// Behaviours of the whole install that the platform's own installer tests
// (deploy/node/test_node_install.py), each as a test of ours (items 7a,
// 7g, 7h, 7j, 7k and 7l of issue 26).

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/workflow"
)

// answerIdentity makes the fixture's Core answer its identity route with
// h first (true: answered), the other routes as before.
func (f *runFixture) answerIdentity(h func(w http.ResponseWriter, r *http.Request) bool) {
	next := f.srv.Config.Handler
	f.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/sandbox-node/identity" && h(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// 7a: the summary's status, log and installer commands start with `sudo `
// when SUDO_UID names a non-root caller, and not when it is unset or 0.
func TestSummaryCommandsTakeSudoForANonRootSudoCaller(t *testing.T) {
	unit := layout.UnitName(generationtest.InstallationID)
	for _, tc := range []struct {
		name, uid string
		set, sudo bool
	}{
		{"unset", "", false, false},
		{"root", "0", true, false},
		{"non-root caller", "1000", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SUDO_UID", tc.uid)
			if !tc.set {
				os.Unsetenv("SUDO_UID")
			}
			f := newRunFixture(t)
			f.installed(t)
			out := f.out.String()
			prefix := ""
			if tc.sudo {
				prefix = "sudo "
			}
			for _, want := range []string{
				"\n  Status: " + prefix + "systemctl status " + unit + "\n",
				"\n  Logs: " + prefix + "journalctl -u " + unit + " -f\n",
				"\n  Installer: " + prefix + "oac-node-install status\n",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("the summary lacks %q:\n%s", want, out)
				}
			}
			if !tc.sudo && strings.Contains(out, "  Status: sudo ") {
				t.Errorf("the summary says sudo for SUDO_UID %q:\n%s", tc.uid, out)
			}
		})
	}
}

// 7g: a rerun after a registration that was not confirmed (Core never saw
// it, or its answer was lost) registers once and does not import the
// Runtime image again.
func TestARerunAfterAnUnconfirmedRegistrationDoesNotImportTheImageAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file string
		regs       int // registrations Core saw in the first run
	}{
		{"Core never saw it", "fail-register", 0},
		{"its answer was lost", "lose-register-answer", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newRunFixture(t)
			if err := os.WriteFile(filepath.Join(f.base, "engine", tc.file), nil, 0o666); err != nil {
				t.Fatal(err)
			}
			if _, err := f.install(t, nil); err == nil {
				t.Fatal("the first run did not fail at the register step")
			}
			if _, err := os.Lstat(f.host.NodeRoot(generationtest.InstallationID) + "/" + layout.RegisteredFile); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("registered.json after an unconfirmed registration: %v", err)
			}
			st := f.engineState(t)
			if st.Loads != 1 || len(st.Images) != 1 || f.registrations() != tc.regs {
				t.Fatalf("after the first run: %d loads, %d images, %d registrations", st.Loads, len(st.Images), f.registrations())
			}
			rep, err := f.install(t, nil)
			if err != nil || rep.Condition != workflow.Complete {
				t.Fatalf("the rerun: %v %v\n%s", rep, err, f.out.String())
			}
			if got := f.engineState(t); got.Loads != st.Loads || len(got.Images) != 1 {
				t.Errorf("the rerun imported the image again: loads %d -> %d, %d images", st.Loads, got.Loads, len(got.Images))
			}
			if n := f.registrations(); n != 1 {
				t.Errorf("%d registrations, want 1", n)
			}
		})
	}
}

// 7h: a rerun after the unit failed to start keeps registered.json as it
// is and does not register again.
func TestARerunAfterTheUnitFailedToStartKeepsRegisteredJSON(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	unit := layout.UnitName(generationtest.InstallationID)
	f.systemd.Fail("start", unit, errors.New("the unit did not start"))
	if _, err := f.install(t, nil); err == nil || !strings.Contains(err.Error(), "did not start") {
		t.Fatalf("the first run: %v", err)
	}
	reg := filepath.Join(f.host.NodeRoot(generationtest.InstallationID), layout.RegisteredFile)
	before := fileState(t, reg)
	if f.registrations() != 1 {
		t.Fatalf("%d registrations after the first run", f.registrations())
	}
	for _, token := range []string{fixtureToken, ""} {
		rep, err := f.install(t, func(c *Command) { c.Token = token })
		if err != nil || rep.Condition != workflow.Complete {
			t.Fatalf("the rerun (token %v): %v %v\n%s", token != "", rep, err, f.out.String())
		}
		if fileState(t, reg) != before {
			t.Errorf("registered.json changed (token %v)", token != "")
		}
		if n := f.registrations(); n != 1 {
			t.Errorf("%d registrations, want 1", n)
		}
	}
}

// 7j: the completion summary follows readiness only (the workflow reaches
// it from the readiness wait alone): a run whose readiness fails prints
// none; and no output holds the enrollment token.
func TestTheSummaryComesOnlyAfterReadinessAndNeverHoldsTheToken(t *testing.T) {
	t.Parallel()
	var from []workflow.State
	for _, sd := range workflow.InstallDefinition().States {
		for _, tr := range sd.On {
			if tr.To == workflow.InstallSummary {
				from = append(from, sd.Name)
			}
		}
	}
	if !slices.Equal(from, []workflow.State{workflow.InstallWaitReady}) {
		t.Errorf("the summary is reached from %v, want only %s", from, workflow.InstallWaitReady)
	}

	f := newRunFixture(t)
	var other atomic.Bool
	other.Store(true)
	f.answerIdentity(func(w http.ResponseWriter, r *http.Request) bool {
		if !other.Load() {
			return false
		}
		json.NewEncoder(w).Encode(map[string]any{"node_id": "0f0e0d0c-0b0a-4908-8706-050403020100", "installation_id": generationtest.InstallationID,
			"provider": "docker", "deployment_generation": 1, "specification_digest": f.spec.Digest(), "connected": true, "provider_ready": true})
		return true
	})
	_, err := f.install(t, nil)
	if err == nil || !strings.Contains(err.Error(), "different node identity") {
		t.Fatalf("the run: %v", err)
	}
	first := f.out.String()
	for _, no := range []string{CompleteTitle, "Manage", "Core connection: connected"} {
		if strings.Contains(first, no) {
			t.Errorf("a run whose readiness failed printed %q:\n%s", no, first)
		}
	}
	other.Store(false)
	rep, err := f.install(t, nil)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("the rerun: %v %v\n%s", rep, err, f.out.String())
	}
	second := f.out.String()
	if !strings.Contains(second, CompleteTitle) {
		t.Errorf("the ready run printed no summary:\n%s", second)
	}
	for _, out := range []string{first, second} {
		if strings.Contains(out, fixtureToken) {
			t.Errorf("the output holds the enrollment token:\n%s", out)
		}
	}
}

// 7l: the insecure-origin policy is recorded (installation.json, the host
// record, the bookkeeping, and by the node program in identity.json) and
// passed to the node program only when the command has the flag.
func TestTheInsecureOriginPolicyIsRecordedAndPassedOnlyWithTheFlag(t *testing.T) {
	t.Parallel()
	for _, insecure := range []bool{false, true} {
		t.Run(map[bool]string{false: "without the flag", true: "with the flag"}[insecure], func(t *testing.T) {
			t.Parallel()
			f := newRunFixture(t)
			rep, err := f.install(t, func(c *Command) { c.Options.AllowInsecureOrigin = insecure })
			if err != nil || rep.Condition != workflow.Complete {
				t.Fatalf("install: %v %v\n%s", rep, err, f.out.String())
			}
			id := ident.InstallationID(generationtest.InstallationID)
			root := f.host.NodeRoot(id)
			for _, rel := range []string{layout.InstallationFile, layout.RegisteredFile, layout.NodeIdentityFile} {
				var m map[string]any
				data, err := os.ReadFile(filepath.Join(root, rel))
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(data, &m); err != nil {
					t.Fatal(err)
				}
				if v, ok := m["allow_insecure_origin"]; ok != insecure || (ok && v != true) {
					t.Errorf("%s: allow_insecure_origin %v (present %v), want present %v", rel, v, ok, insecure)
				}
			}
			rec, err := hostrecord.Read(f.host, id)
			if err != nil || rec.AllowInsecureOrigin != insecure {
				t.Errorf("host record: %+v %v", rec, err)
			}
			db, err := bookkeeping.Open(f.host.Bookkeeping())
			if err != nil {
				t.Fatal(err)
			}
			inst, err := db.GetInstallation(id)
			db.Close()
			if err != nil || inst.AllowInsecureOrigin != insecure {
				t.Errorf("bookkeeping: %+v %v", inst, err)
			}
		})
	}
}

// 7l (the node program's command line): `oac-node register` gets
// --allow-insecure-origin only with the policy.
func TestNodeProgramGetsTheInsecureFlagOnlyWithThePolicy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog, argv := filepath.Join(dir, "oac-node"), filepath.Join(dir, "argv")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > "+argv+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, insecure := range []bool{false, true} {
		err := NodeProgram{}.Register(context.Background(), RegisterRequest{Program: prog, Config: "/c", StateDir: "/s", CoreURL: "http://core.example",
			Name: "n", TokenFile: "/t", AllowInsecureOrigin: insecure})
		if err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(argv)
		if err != nil {
			t.Fatal(err)
		}
		args := strings.Split(strings.TrimSpace(string(data)), "\n")
		if n := strings.Count(string(data), "--allow-insecure-origin\n"); n != map[bool]int{false: 0, true: 1}[insecure] {
			t.Errorf("policy %v: argv %q", insecure, args)
		}
		if args[0] != "register" {
			t.Errorf("argv %q", args)
		}
	}
}

// 7k: a registered microsandbox node whose provider.json resources
// changed is refused before any change, and not registered again.
func TestARegisteredMicrosandboxNodeWhoseResourcesChangedIsRefused(t *testing.T) {
	for _, key := range []string{"cpus", "memory_mib", "root_disk_mib", "environment_disk_mib"} {
		t.Run(key, func(t *testing.T) {
			r := newMSBRun(t, provider.MaxStorePath)
			r.installed(t)
			p := filepath.Join(r.host.NodeRoot(generationtest.InstallationID), layout.ProviderConfigFile)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			m := doc["microsandbox"].(map[string]any)
			m[key] = m[key].(float64) + 1
			data, _ = json.MarshalIndent(doc, "", "  ")
			if err := os.WriteFile(p, append(data, '\n'), 0o600); err != nil {
				t.Fatal(err)
			}
			before := r.tree(t, true)
			_, err = r.run(t)
			if err == nil || !strings.Contains(err.Error(), "provider.json") || !strings.Contains(err.Error(), "registered with another configuration") || !strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
				t.Fatalf("the rerun: %v, want a refusal naming provider.json and the registration, ending in \"Nothing was changed.\"\n%s", err, r.out.String())
			}
			if d := generationtest.DiffHost(before, r.tree(t, true)); d != "" {
				t.Errorf("the refusal changed:\n%s", d)
			}
			if n := r.registrations(); n != 1 {
				t.Errorf("%d registrations, want 1", n)
			}
		})
	}
}
