package uninstall

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/accounts/accountstest"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/host/systemd/systemdtest"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/testsupport/fakehost"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
)

const id = generationtest.InstallationID

// hostFixture is a host root with an installed node (the files, records,
// account, unit and network an installation leaves), the fakes for the
// host adapters, a real privsep child as the account and a Core whose
// answer to the identity route the test sets.
type hostFixture struct {
	base     string
	host     layout.Host
	systemd  *systemdtest.Fake
	accts    *accountstest.Fake
	dbs      accounts.Databases
	core     *httptest.Server
	status   atomic.Int32
	running  bool
	children atomic.Int32
	out      bytes.Buffer
	bin      *privsep.Binary
	// before is the host root before the installation.
	before map[string]string
	store  string
}

func newHostFixture(t *testing.T) *hostFixture {
	h := fakehost.New(t, "oac-uninstall-host-", "etc/systemd/system", "var/lib", "run")
	f := &hostFixture{base: h.Base, host: h.Host, accts: h.Accounts, dbs: h.DBs, systemd: h.Systemd, bin: h.Binary}
	f.core = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/sandbox-node/identity" || r.Header.Get("Authorization") != "Bearer "+generationtest.Credential {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(int(f.status.Load()))
		w.Write([]byte("{}"))
	}))
	t.Cleanup(f.core.Close)
	f.status.Store(http.StatusUnauthorized)
	return f
}

// adoptable makes an account before the installation, whose home has
// mode 0755: the installation adopts it.
func (f *hostFixture) adoptable(t *testing.T) {
	if err := f.accts.CreateServiceAccount(context.Background(), "/usr/sbin/nologin"); err != nil {
		t.Fatal(err)
	}
	u := f.user(t)
	home := f.host.Home()
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(home, 0o755)
	os.Lchown(home, u.UID, u.GID)
}

func (f *hostFixture) user(t *testing.T) accounts.User {
	u, err := f.dbs.LookupUser(layout.Account)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// install leaves what an installation of a docker node leaves, with a
// microsandbox store of the installation too, recording what it made in
// the bookkeeping as the install steps do. It snapshots the host first.
func (f *hostFixture) install(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	f.before = treetest.Snapshot(t, f.host.Root, treetest.Options{})
	_, lerr := f.dbs.LookupUser(layout.Account)
	created := errors.Is(lerr, accounts.ErrNotFound)
	var homeMode *os.FileMode
	if created {
		if err := f.accts.CreateServiceAccount(ctx, "/usr/sbin/nologin"); err != nil {
			t.Fatal(err)
		}
	} else {
		fi, err := os.Lstat(f.host.Home())
		if err != nil {
			t.Fatal(err)
		}
		m := fi.Mode().Perm()
		homeMode = &m
	}
	u := f.user(t)
	if err := f.accts.AddToGroup(ctx, "docker"); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(f.host.EtcDir(), 0o755)
	os.Chmod(f.host.EtcDir(), 0o755)
	coreCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.core.Certificate().Raw})
	db, err := bookkeeping.Open(f.host.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	must(t, db.PutAccount(bookkeeping.Account{Name: layout.Account, Created: created, UID: u.UID, HomeMode: homeMode}))
	must(t, db.AddGroup("docker"))
	must(t, db.PutInstallation(bookkeeping.Installation{ID: id, Provider: "docker", CoreURL: f.core.URL,
		NodeRoot: f.host.NodeRoot(id), Unit: f.host.Unit(id), EnvFile: f.host.EnvFile(id), CoreCA: release.SHA256Hex(coreCA)}))
	for p, kind := range map[string]string{f.host.Unit(id): bookkeeping.FileUnit, f.host.EnvFile(id): bookkeeping.FileEnv, f.host.Record(id): bookkeeping.FileRecord} {
		must(t, db.AddFile(bookkeeping.File{Path: p, InstallationID: id, Kind: kind}))
	}
	db.Close()
	writeFile(t, f.host.Unit(id), "[Unit]\nDescription=node\n", 0o644)
	writeFile(t, f.host.EnvFile(id), "HTTPS_PROXY=http://proxy.example:3128\n", 0o600)
	writeFile(t, f.host.Record(id), `{"format": 1, "installation_id": "`+id+`", "provider": "docker", "core_url": "`+f.core.URL+`", "core_ca_sha256": "`+release.SHA256Hex(coreCA)+`"}`+"\n", 0o644)
	must(t, os.Mkdir(f.host.DockerConfig(), 0o755))
	unit := layout.UnitName(id)
	must(t, f.systemd.Reload(ctx))
	must(t, f.systemd.Enable(ctx, unit))
	must(t, f.systemd.Start(ctx, unit))

	rel := generationtest.BuildRelease(t, generationtest.CommitA)
	srv := generationtest.NewServer(t, rel)
	generationtest.SetupNode(t, f.host.Home(), srv, "docker", rel, docker.DefaultHost)
	writeFile(t, filepath.Join(f.host.NodeRoot(id), "registered.json"), "{}\n", 0o600)
	writeFile(t, filepath.Join(f.host.NodeRoot(id), layout.CoreCAFile), string(coreCA), 0o600)
	f.store = filepath.Join(f.host.Home(), ".oac", "m", "0123456789ab")
	must(t, os.MkdirAll(f.store, 0o700))
	writeFile(t, filepath.Join(f.store, "oac-installation.json"), `{"installation_id": "`+id+`"}`+"\n", 0o600)
	writeFile(t, filepath.Join(f.store, "disk.img"), "sandbox disk", 0o600)
	must(t, filepath.Walk(f.host.Home(), func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, u.UID, u.GID)
	}))
	must(t, fileEngineOf(f.host.Home()).Save(dockertest.FileState{Nets: map[string]map[string]string{
		docker.NetworkName(id): {install.InstallationLabel: id}}}))
	installJournal(t, f.host)
}

// installJournal leaves root's install journal as an installation whose
// last run failed at the readiness wait leaves it: a journal that looks
// like a run to continue.
func installJournal(t *testing.T, h layout.Host) {
	t.Helper()
	must(t, os.MkdirAll(h.JournalDir(id), 0o700))
	def := workflow.InstallDefinition()
	steps := map[workflow.State]workflow.Step{}
	for _, sd := range def.States {
		name := sd.Name
		st := workflow.StepFunc(func(context.Context, workflow.Facts) (workflow.Result, error) {
			if name == workflow.InstallWaitReady {
				return workflow.Result{}, errors.New("the node did not become ready")
			}
			return workflow.Result{}, nil
		})
		if sd.Policy == workflow.Verify {
			steps[name] = verifying{st}
		} else {
			steps[name] = st
		}
	}
	r := &workflow.Runner{Def: def, Steps: steps, Journal: install.JournalPath(h, id), Binding: workflow.Binding{Version: "test", InstallationID: id}}
	if _, err := r.Run(context.Background()); err == nil {
		t.Fatal("the install journal's run did not fail")
	}
}

type verifying struct{ workflow.StepFunc }

func (verifying) Verify(context.Context, workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	return workflow.NotDone, workflow.Result{}, nil
}

func writeFile(t *testing.T, p, text string, mode os.FileMode) {
	t.Helper()
	must(t, os.WriteFile(p, []byte(text), mode))
	must(t, os.Chmod(p, mode))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f *hostFixture) command(force bool) Command {
	child := asaccount.NewChildren(privsep.Options{Binary: f.bin, Home: f.host.Home(), Output: &f.out}, f.dbs)
	return Command{
		Options: Options{InstallationID: id, Force: force}, Host: f.host, Accounts: f.accts, Systemd: f.systemd,
		Child: func(ctx context.Context, req asaccount.Request) (asaccount.Answer, error) {
			f.children.Add(1)
			return child.Run(ctx, req)
		},
		EndChild: child.Close,
		Running:  func(int) (bool, error) { return f.running, nil },
		Version:  "test", Out: &f.out,
	}
}

func (f *hostFixture) uninstall(t *testing.T, force bool) (*workflow.Report, error) {
	t.Helper()
	return Run(context.Background(), f.command(force))
}

// leftovers is what differs from the host before the installation, but
// for what stays by design: the journals and the host lock.
func (f *hostFixture) leftovers(t *testing.T) string {
	before, after := maps.Clone(f.before), treetest.Snapshot(t, f.host.Root, treetest.Options{})
	for _, m := range []map[string]string{before, after} {
		for k := range m {
			if k == "run/oac-node.lock" || strings.HasPrefix(k, "var/lib/oac-node-install") {
				delete(m, k)
			}
		}
	}
	return treetest.Diff(before, after)
}

func (f *hostFixture) engine(t *testing.T) dockertest.FileState {
	st, err := fileEngineOf(f.host.Home()).State()
	must(t, err)
	return st
}

func TestUninstallLeavesTheHostAsBeforeTheInstallation(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	rep, err := f.uninstall(t, false)
	if err != nil {
		t.Fatalf("%v\n%s", err, f.out.String())
	}
	if rep.Condition != workflow.Complete {
		t.Fatalf("condition %s", rep.Condition)
	}
	if d := f.leftovers(t); d != "" {
		t.Errorf("the host differs from before the installation:\n%s\noutput:\n%s", d, f.out.String())
	}
	if _, err := f.dbs.LookupUser(layout.Account); !errors.Is(err, accounts.ErrNotFound) {
		t.Errorf("the account the installer created remains: %v", err)
	}
	if len(f.engine(t).Nets) != 0 {
		t.Errorf("networks remain: %v", f.engine(t).Nets)
	}
	if f.systemd.Enabled(layout.UnitName(id)) {
		t.Error("the unit is still enabled")
	}
	// The fake manager reports every unit needing a daemon-reload after
	// links change (systemd >= 257): the disable is followed by a reload,
	// and nothing is left pending.
	calls := f.systemd.Calls()
	if i := slices.Index(calls, "disable "+layout.UnitName(id)); i < 0 || !slices.Contains(calls[i:], "reload") {
		t.Errorf("no daemon-reload after the disable: %v", calls)
	}
	if st, err := f.systemd.State(context.Background(), layout.UnitName(id)); err != nil || st.NeedDaemonReload {
		t.Errorf("after the uninstall the unit needs a daemon-reload (%+v, %v)", st, err)
	}
	out := f.out.String()
	for _, want := range []string{"sudo docker image rm sha256:", "uninstalled from this host"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}

	// The install journal is kept aside as a receipt, unchanged.
	if _, err := os.Lstat(install.JournalPath(f.host, id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the install journal remains: %v", err)
	}
	if rep, err := workflow.InspectJournal(install.JournalPath(f.host, id)+".1", workflow.Lookup); err != nil || rep.Condition != workflow.Failed {
		t.Errorf("the install receipt: %+v %v", rep, err)
	}

	t.Run("rerun after completion is a no-op", func(t *testing.T) {
		before, n := treetest.Snapshot(t, f.host.Root, treetest.Options{}), f.children.Load()
		f.out.Reset()
		rep, err := f.uninstall(t, false)
		if err != nil || rep.Condition != workflow.Complete || rep.Run != workflow.RunConverged {
			t.Fatalf("%v %v", rep, err)
		}
		if d := generationtest.DiffHost(before, treetest.Snapshot(t, f.host.Root, treetest.Options{})); d != "" || f.children.Load() != n {
			t.Errorf("the rerun changed the host or ran a child:\n%s", d)
		}
		if !strings.Contains(f.out.String(), "already uninstalled") {
			t.Errorf("output: %s", f.out.String())
		}
	})
}

// TestUninstallAfterAReinstallation: a node installed again after an
// uninstallation is uninstalled again, not reported "already uninstalled";
// each run keeps its install journal aside, and the earlier uninstall
// journal too.
func TestUninstallAfterAReinstallation(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	if _, err := f.uninstall(t, false); err != nil {
		t.Fatalf("%v\n%s", err, f.out.String())
	}
	f.install(t)
	f.out.Reset()
	rep, err := f.uninstall(t, false)
	if err != nil || rep.Condition != workflow.Complete || rep.Run != workflow.RunFresh {
		t.Fatalf("%v %v\n%s", rep, err, f.out.String())
	}
	if strings.Contains(f.out.String(), "already uninstalled") {
		t.Fatalf("the reinstalled node was taken for uninstalled:\n%s", f.out.String())
	}
	if d := f.leftovers(t); d != "" {
		t.Errorf("the host differs from before the second installation:\n%s\noutput:\n%s", d, f.out.String())
	}
	if _, err := f.dbs.LookupUser(layout.Account); !errors.Is(err, accounts.ErrNotFound) {
		t.Errorf("the account remains: %v", err)
	}
	for _, p := range []string{install.JournalPath(f.host, id) + ".1", install.JournalPath(f.host, id) + ".2", JournalPath(f.host, id) + ".1", JournalPath(f.host, id)} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("journal %s: %v", p, err)
		}
	}
	if _, err := os.Lstat(install.JournalPath(f.host, id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the install journal remains: %v", err)
	}

	// Once more, nothing to do.
	f.out.Reset()
	if _, err := f.uninstall(t, false); err != nil || !strings.Contains(f.out.String(), "already uninstalled") {
		t.Errorf("the third run: %v\n%s", err, f.out.String())
	}
}

func TestUninstallRefusalsChangeNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		want   []string
		not    string
	}{
		{"Core still lists the node", http.StatusOK, []string{"Core still lists this node", "Nodes page", "Nothing was changed."}, "--force"},
		{"Core answers another status", http.StatusServiceUnavailable, []string{"HTTP 503", "--force", "Nothing was changed."}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newHostFixture(t)
			f.install(t)
			f.status.Store(int32(tc.status))
			installed := treetest.Snapshot(t, f.host.Root, treetest.Options{})
			_, err := f.uninstall(t, false)
			if err == nil {
				t.Fatal("uninstall went on")
			}
			for _, w := range tc.want {
				if !strings.Contains(workflow.Message(err), w) {
					t.Errorf("the refusal lacks %q: %v", w, err)
				}
			}
			if tc.not != "" && strings.Contains(err.Error(), tc.not) {
				t.Errorf("the refusal names %q: %v", tc.not, err)
			}
			if d := generationtest.DiffHost(installed, treetest.Snapshot(t, f.host.Root, treetest.Options{})); d != "" {
				t.Errorf("the refusal changed the host:\n%s", d)
			}
			if len(f.engine(t).Nets) != 1 || f.systemd.Enabled(layout.UnitName(id)) == false {
				t.Error("the refusal changed the engine or the unit")
			}
		})
	}
	t.Run("Core unreachable", func(t *testing.T) {
		f := newHostFixture(t)
		f.install(t)
		f.core.Close()
		installed := treetest.Snapshot(t, f.host.Root, treetest.Options{})
		_, err := f.uninstall(t, false)
		if err == nil || !strings.Contains(err.Error(), "--force") || !strings.Contains(workflow.Message(err), "Nothing was changed.") {
			t.Fatalf("err %v", err)
		}
		if d := generationtest.DiffHost(installed, treetest.Snapshot(t, f.host.Root, treetest.Options{})); d != "" {
			t.Errorf("the refusal changed the host:\n%s", d)
		}
	})
	t.Run("no record without --force", func(t *testing.T) {
		f := newHostFixture(t)
		before := treetest.Snapshot(t, f.host.Root, treetest.Options{})
		_, err := f.uninstall(t, false)
		if err == nil || !strings.Contains(err.Error(), "--force") || !strings.Contains(workflow.Message(err), "Nothing was changed.") {
			t.Fatalf("err %v", err)
		}
		if d := generationtest.DiffHost(before, treetest.Snapshot(t, f.host.Root, treetest.Options{})); d != "" {
			t.Errorf("the refusal changed the host:\n%s", d)
		}
	})
}

func TestUninstallForceKeepsTheStoreAndTheAccount(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	f.core.Close() // that Core is gone
	rep, err := f.uninstall(t, true)
	// The store and the account stay for a rerun: not complete.
	if err != nil || rep.Condition != workflow.Incomplete || rep.AccountKept() != "store" {
		t.Fatalf("%v %v\n%s", rep, err, f.out.String())
	}
	out := f.out.String()
	for _, want := range []string{"skip the Core check", "sudo systemd-run --uid=oac-node --wait --collect --quiet rm -rf " + f.store, "--force"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(f.store, "disk.img")); err != nil {
		t.Errorf("the store is gone: %v", err)
	}
	if _, err := os.Lstat(f.host.NodeRoot(id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the node root remains: %v", err)
	}
	f.user(t) // the account stays for the rerun

	// The operator removes the store as printed and reruns.
	must(t, os.RemoveAll(filepath.Join(f.host.Home(), ".oac")))
	f.out.Reset()
	if rep, err := f.uninstall(t, true); err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("rerun: %v %v\n%s", rep, err, f.out.String())
	}
	if d := f.leftovers(t); d != "" {
		t.Errorf("after the rerun the host differs from before the installation:\n%s", d)
	}
}

func TestUninstallKeepsAnAdoptedAccount(t *testing.T) {
	f := newHostFixture(t)
	f.adoptable(t)
	f.install(t)
	if fi, _ := os.Lstat(f.host.Home()); fi.Mode().Perm() != 0o700 {
		t.Fatalf("the installation left the home %v", fi.Mode())
	}
	if _, err := f.uninstall(t, false); err != nil {
		t.Fatalf("%v\n%s", err, f.out.String())
	}
	f.user(t)
	groups, err := f.dbs.GroupNames(layout.Account)
	must(t, err)
	if slices.Contains(groups, "docker") {
		t.Errorf("the adopted account is still in the group docker: %v", groups)
	}
	if d := f.leftovers(t); d != "" {
		t.Errorf("the host differs from before the installation:\n%s", d)
	}
}

func TestUninstallKeepsTheAccountWhileAProcessRuns(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	f.running = true
	rep, err := f.uninstall(t, false)
	if err != nil {
		t.Fatalf("%v\n%s", err, f.out.String())
	}
	if !strings.Contains(f.out.String(), "pgrep -u oac-node") {
		t.Errorf("output: %s", f.out.String())
	}
	// The account, installer.db and /etc/oac-node remain: the run is not
	// complete, whatever its journal's end says.
	if rep.Condition != workflow.Incomplete {
		t.Errorf("with the account kept the condition is %s, not %s", rep.Condition, workflow.Incomplete)
	}
	f.user(t)
	f.running = false
	f.out.Reset()
	rep, err = f.uninstall(t, true)
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, f.out.String())
	}
	if rep.Condition != workflow.Complete {
		t.Errorf("the rerun's condition is %s", rep.Condition)
	}
	if d := f.leftovers(t); d != "" {
		t.Errorf("after the rerun the host differs from before the installation:\n%s", d)
	}
}

// The service-account steps of a run share one child, which prints its
// progress lines to the operator and ends before the account step: the
// run's own child never keeps the account.
func TestTheRunsChildEndsBeforeTheAccountStep(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	c := f.command(false)
	var seen []int
	c.Running = func(uid int) (bool, error) {
		pids, err := childrenOfThisTestAs(uid)
		seen = pids
		return len(pids) > 0, err
	}
	rep, err := Run(context.Background(), c)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("%v %v\n%s", rep, err, f.out.String())
	}
	if f.children.Load() < 4 || len(seen) > 0 {
		t.Errorf("%d service-account steps ran; at the account step the run's children %v ran as the account", f.children.Load(), seen)
	}
	if _, err := f.dbs.LookupUser(layout.Account); !errors.Is(err, accounts.ErrNotFound) {
		t.Errorf("the account remains: %v\n%s", err, f.out.String())
	}
	if out := f.out.String(); !strings.Contains(out, "remove the node state") {
		t.Errorf("the child's progress lines are not the operator's:\n%s", out)
	}
}

// A run that fails after its child started ends the child before it
// returns (and so before the host lock is released).
func TestTheRunsChildEndsWithARunThatFails(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	u := f.user(t)
	c := f.command(false)
	child := c.Child
	c.Child = func(ctx context.Context, req asaccount.Request) (asaccount.Answer, error) {
		if req.Step == string(workflow.UninstallMicrosandboxStore) {
			return asaccount.Answer{}, errors.New("the store step failed")
		}
		return child(ctx, req)
	}
	if _, err := Run(context.Background(), c); err == nil {
		t.Fatal("the run did not fail")
	}
	if f.children.Load() == 0 {
		t.Fatal("no step ran in the child")
	}
	if pids, err := childrenOfThisTestAs(u.UID); err != nil || len(pids) > 0 {
		t.Errorf("after the run, its children %v run as the account (%v)", pids, err)
	}
}

// childrenOfThisTestAs lists the processes this test process started
// that run as uid: another test's processes of the same uid are not this
// run's.
func childrenOfThisTestAs(uid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + ent.Name() + "/status")
		if err != nil {
			continue // ended meanwhile
		}
		var ppid, ruid = -1, -1
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "PPid:"); ok {
				ppid, _ = strconv.Atoi(strings.TrimSpace(v))
			}
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				if fields := strings.Fields(v); len(fields) > 0 {
					ruid, _ = strconv.Atoi(fields[0])
				}
			}
		}
		if ppid == os.Getpid() && ruid == uid {
			out = append(out, pid)
		}
	}
	return out, nil
}

// An account whose home is gone (removed by hand, or never made by an
// install a full /etc stopped) does not stop the uninstallation: its
// children run in /, find nothing of the node's to remove, and the rest
// goes as usual. A registered node's credential went with the home, so
// without --force the uninstallation says to remove the node in Web and
// use --force, which finishes.
func TestUninstallWithoutTheHome(t *testing.T) {
	for _, force := range []bool{false, true} {
		t.Run(fmt.Sprintf("force=%v", force), func(t *testing.T) {
			f := newHostFixture(t)
			f.install(t)
			must(t, os.RemoveAll(f.host.Home()))
			rep, err := f.uninstall(t, force)
			if !force {
				// The node's credential went with the home: Core cannot be
				// asked, and the refusal names the command that goes on.
				if err == nil || !strings.Contains(err.Error(), "credential (state/node/identity.json) is gone") || !strings.Contains(err.Error(), "--force") {
					t.Fatalf("%v %v\n%s", rep, err, f.out.String())
				}
				f.out.Reset()
				rep, err = f.uninstall(t, true)
			}
			if err != nil || rep.Condition != workflow.Complete {
				t.Fatalf("%v %v\n%s", rep, err, f.out.String())
			}
			if _, err := os.Lstat(f.host.Record(id)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the host record remains: %v", err)
			}
		})
	}
}
