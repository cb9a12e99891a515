//go:build e2e

package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/record/launcher"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
	"github.com/openagentcore/oac-node-install/workflow/crashharness"
)

// Moving from the platform's installer (CONTRACT §11), in the test host.
//
// The host is laid out as the platform's installer leaves it by installing
// with this installer and then transforming the host (platformLayout): on
// identical inputs the node root, account, groups and host record are the
// same (CONTRACT §11), so what differs is removed or rewritten: the
// bookkeeping, the journals and the command's copy go; account.json is
// written as the platform's installer writes it (indent 2, sorted keys:
// created, the uid, groups_added ["docker"]); the unit loses its
// EnvironmentFile= line; the Docker network is made again without labels
// (networks cannot be relabelled). In the node root, the JSON records are
// rewritten on one line, as the platform's programs write them (compared
// by value, left as they are), and the retained helper is the platform's:
// no generation-preparer, and a generation-preparer.pyz of other bytes
// (the platform's installer), which the takeover replaces with this
// installer's helper and launcher.

// platformLayout turns the installed host into the platform installer's
// layout of the same node.
func (h *crashHost) platformLayout(t *testing.T) {
	t.Helper()
	id := h.r.core.installationID
	// Through the host's own mounts (on the power-cut file system in
	// that mode), each change made durable: the layout is the host's
	// state before the command, which a power cut must not undo.
	etc, varLib := h.Etc(), h.VarLib()
	uid := -1
	passwd, err := os.ReadFile(filepath.Join(etc, "passwd"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(passwd), "\n") {
		if f := strings.Split(l, ":"); len(f) > 2 && f[0] == "oac-node" {
			uid = atoi(t, f[2])
		}
	}
	if uid < 0 {
		t.Fatal("no oac-node account after the install")
	}
	// What this installer keeps of its own and the platform's does not
	// write: the bookkeeping, root's copy of the Core CA, the journals.
	for _, p := range []string{filepath.Join(etc, "oac-node", "installer.db"), filepath.Join(etc, "oac-node", id+".core-ca.pem"),
		filepath.Join(varLib, "oac-node-install")} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
		syncPath(t, filepath.Dir(p))
	}
	h.Exec(t.Context(), "rm", "-f", "/usr/local/sbin/oac-node-install")
	acct, _ := json.MarshalIndent(map[string]any{"created": true, "format": 1, "groups_added": []string{"docker"}, "uid": uid}, "", "  ")
	writeSynced(t, filepath.Join(etc, "oac-node", "account.json"), append(acct, '\n'))
	h.platformNodeRoot(t, filepath.Join(varLib, "oac-node", ".oac", "nodes", id), uid)
	unit := filepath.Join(etc, "systemd", "system", "oac-node-"+id+".service")
	ours, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	writeSynced(t, unit, install.PlatformUnit(ours))
	net := "oac-node-" + id
	if out, err := exec.Command("docker", "network", "rm", net).CombinedOutput(); err != nil {
		t.Fatalf("docker network rm: %v %s", err, out)
	}
	if out, err := exec.Command("docker", "network", "create", net).CombinedOutput(); err != nil {
		t.Fatalf("docker network create: %v %s", err, out)
	}
}

// platformNodeRoot turns the node root into the platform's: its JSON
// records on one line (same value; release files keep their bytes), and the platform's retained helper, a
// zip application of other bytes, instead of this installer's.
func (h *crashHost) platformNodeRoot(t *testing.T, root string, uid int) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// Release files (the seccomp profile, the manifest's copy)
			// are the release's bytes, not records.
			switch rel, _ := filepath.Rel(root, p); rel {
			case "runtime", "releases", "native", "images":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".json") && !strings.HasSuffix(p, ".lease-identity") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var line bytes.Buffer
		if err := json.Compact(&line, data); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		writeSynced(t, p, line.Bytes())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, layout.HelperFile)); err != nil {
		t.Fatal(err)
	}
	var pyz bytes.Buffer
	zw := zip.NewWriter(&pyz)
	w, err := zw.Create("__main__.py")
	if err == nil {
		_, err = w.Write([]byte("raise SystemExit('the platform installer')\n"))
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	launcherPath := filepath.Join(root, layout.HelperLauncherFile)
	if err := os.Remove(launcherPath); err != nil {
		t.Fatal(err)
	}
	writeSynced(t, launcherPath, pyz.Bytes())
	if err := os.Chmod(launcherPath, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(launcherPath, uid, -1); err != nil {
		t.Fatal(err)
	}
	syncPath(t, launcherPath)
}

// retainsThisHelper checks that the node root holds this installer's
// helper and launcher again.
func (h *crashHost) retainsThisHelper(t *testing.T) {
	t.Helper()
	root := filepath.Join(h.VarLib(), "oac-node", ".oac", "nodes", h.r.core.installationID)
	got, err := os.ReadFile(filepath.Join(root, layout.HelperLauncherFile))
	if err != nil || !bytes.Equal(got, launcher.Bytes()) {
		t.Errorf("the node root's %s is not this installer's launcher after the takeover (%v)", layout.HelperLauncherFile, err)
	}
	if fi, err := os.Stat(filepath.Join(root, layout.HelperFile)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the node root's %s after the takeover: %v %v", layout.HelperFile, fi, err)
	}
}

// writeSynced writes root's 0644 file p and makes it and its name durable.
func writeSynced(t *testing.T, p string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err == nil {
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	syncPath(t, filepath.Dir(p))
}

// syncPath fsyncs p (a directory after a change of its names).
func syncPath(t *testing.T, p string) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

func atoi(t *testing.T, s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// networkLabels is the node network's labels, or "absent".
func (r *crashRig) networkLabels() string {
	out, err := exec.Command("docker", "network", "inspect", "--format", "{{json .Labels}}", "oac-node-"+r.core.installationID).Output()
	if err != nil {
		return "absent"
	}
	return strings.TrimSpace(string(out))
}

// A host laid out as the platform's installer leaves it is taken over by a
// rerun of this installer (no token: the node is registered), which then
// uninstalls it to the host as before: account databases, /etc/oac-node,
// units, and the network.
func TestEndToEndTakeoverThenUninstall(t *testing.T) {
	r := newCrashRig(t)
	h := r.boot(t)
	if res := h.install(t); res.status != 0 {
		t.Fatalf("install: %s", res)
	}
	h.platformLayout(t)
	res := h.install(t)
	if res.status != 0 || !strings.Contains(res.out, "take over the node the platform's installer made") {
		t.Fatalf("the takeover rerun: %s", res)
	}
	if _, err := os.Lstat(filepath.Join(h.Etc(), "oac-node", "account.json")); !os.IsNotExist(err) {
		t.Errorf("account.json remains after the takeover: %v", err)
	}
	h.retainsThisHelper(t)
	recs := h.records(t)
	for _, want := range []string{"Created:true", "group docker", "network oac-node-" + r.core.installationID, "Registered:true"} {
		if !strings.Contains(recs, want) {
			t.Errorf("the bookkeeping lacks %q:\n%s", want, recs)
		}
	}
	if again := h.install(t); again.status != 0 || !strings.Contains(again.out, "No change") {
		t.Errorf("the rerun after the takeover: %s", again)
	}
	if u := h.uninstall(t, false); u.status != 0 || !strings.Contains(u.out, "uninstalled from this host") {
		t.Fatalf("uninstall after the takeover: %s", u)
	}
	h.uninstalled(t, "taken over, then uninstalled")
	if l := r.networkLabels(); l != "absent" {
		t.Errorf("the platform's network remains: %s", l)
	}
}

// A platform-layout host uninstalled directly (no rerun before) is
// uninstalled to the host as before, the network and the account with it.
func TestEndToEndUninstallPlatformNode(t *testing.T) {
	r := newCrashRig(t)
	h := r.boot(t)
	if res := h.install(t); res.status != 0 {
		t.Fatalf("install: %s", res)
	}
	h.platformLayout(t)
	if u := h.uninstall(t, false); u.status != 0 || !strings.Contains(u.out, "uninstalled from this host") {
		t.Fatalf("uninstall of the platform's node: %s", u)
	}
	h.uninstalled(t, "a platform node uninstalled")
	if l := r.networkLabels(); l != "absent" {
		t.Errorf("the platform's network remains: %s", l)
	}
}

// takeoverPoints are the points the takeover's crash tests run: every
// point before the install journal's first record (the takeover's own:
// before the bookkeeping's transaction, after it, after account.json's
// removal; and the journal header's), and every 15th of the rerun's after
// it, which are those of any rerun of a registered node (TestEndToEndCrash*
// cover the install's). OAC_E2E_TAKEOVER_ALL=1 runs every point, and
// OAC_E2E_CRASH_POINTS names any point by its number; the harness's other
// selection (_PART, _MAX) applies to these.
func takeoverPoints(all []crashharness.Point) []crashharness.Point {
	if os.Getenv("OAC_E2E_TAKEOVER_ALL") == "1" || os.Getenv(crashharness.EnvPoints) != "" {
		return all
	}
	var out []crashharness.Point
	for i, p := range all {
		if p.State == "" || i%15 == 0 {
			out = append(out, p)
		}
	}
	return out
}

// The takeover rerun killed at its journal points (the takeover's own
// three before the journal: before the bookkeeping's transaction, after
// it, after account.json's removal; then the rerun's): the same command
// again converges on the uninterrupted takeover's host.
func TestEndToEndCrashTakeover(t *testing.T) {
	testCrashTakeover(t, newCrashRig(t))
}

// TestEndToEndPowerCutTakeover: the same points with a power cut after
// each kill (make e2e-powercut; it skips without -tags crashtest).
func TestEndToEndPowerCutTakeover(t *testing.T) {
	requirePowerCut(t)
	r := newCrashRig(t)
	r.powerCut = true
	testCrashTakeover(t, r)
}

func testCrashTakeover(t *testing.T, r *crashRig) {
	var ref reference
	t.Run("uninterrupted", func(t *testing.T) {
		h := r.boot(t)
		if res := h.install(t); res.status != 0 {
			r.skipIfImageLost(t)
			t.Fatalf("install: %s", res)
		}
		h.platformLayout(t)
		count := filepath.Join(r.tmp, "takeover-points")
		if res := h.install(t, crashharness.CountTo(count)); res.status != 0 {
			t.Fatalf("uninterrupted takeover: %s", res)
		}
		ref.tree = h.tree(t, h.nodeID(t))
		ref.outcome = h.outcome(t, "install")
		ref.records = h.records(t)
		ref.points = crashharness.Points(t, count, filepath.Join(h.journalDir(), "install.journal"))
	})
	if ref.points == nil {
		t.FailNow()
	}
	r.noteImage(t)
	t.Logf("uninterrupted takeover rerun: %d failpoints (%s)", len(ref.points), crashharness.PointMap(ref.points))
	pts := crashharness.Sample(t, takeoverPoints(ref.points), crashharness.Sampling{Every: 1})
	c := r.counts()
	for _, p := range pts {
		c.Point(t, p, func(t *testing.T) {
			h := r.boot(t)
			if res := h.install(t); res.status != 0 {
				r.skipIfImageLost(t)
				t.Fatalf("install: %s", res)
			}
			h.platformLayout(t)
			h.crash(t, p, c, func(env ...string) runResult { return h.install(t, env...) })
			if s := h.interrupted(t, "install"); s == string(workflow.InstallLease) {
				// The lease step's Inspect policy: an interrupted lease is
				// the operator's to judge, as after any install's crash.
				before := h.tree(t, "")
				res := h.rerun(t, h.install)
				if res.status == 0 {
					// The lease step's Verify found no lease (the step never
					// ran) or a complete one: the rerun resumed.
					h.converged(t, ref, p.String())
					c.Resumed++
					return
				}
				if !strings.Contains(res.out, `step "lease" (state lease)`) || !strings.Contains(res.out, "Nothing was changed.") {
					t.Fatalf("%s: the rerun of an interrupted lease step did not refuse naming it: %s", p, res)
				}
				if d := before.diff(h.tree(t, ""), nil); len(d) > 0 {
					t.Fatalf("%s: the refusing rerun changed the host:\n%s", p, strings.Join(d, "\n"))
				}
				c.Refused++
				return
			}
			res := h.rerun(t, h.install)
			if res.status != 0 {
				r.skipIfImageLost(t)
				t.Fatalf("%s: the rerun failed: %s", p, res)
			}
			h.converged(t, ref, p.String())
			if r.powerCut {
				h.powerCut(t)
				h.converged(t, ref, p.String()+", rerun, then a power cut")
			}
			c.Resumed++
		})
	}
	c.Log(t, "takeover, "+r.mode())
}
