package install

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/accounts/accountstest"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/host/systemd/systemdtest"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/record/console"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/testsupport/fakehost"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
)

// runFixture is a host root for install.Run: a Core and console over TLS
// (the real console handler, Core's configuration and identity routes),
// a Docker socket and engine, fakes for the accounts and systemd, and the
// real service-account child.
type runFixture struct {
	base    string
	host    layout.Host
	srv     *httptest.Server
	ca      []byte
	spec    *release.Specification
	token   string
	accts   *accountstest.Fake
	systemd *systemdtest.Fake
	engine  *dockertest.FileEngine
	child   asaccount.Runner
	// children is the real child runner f.child starts with.
	children *asaccount.Children
	version  string
	environ  []string
	machine  string
	// coreReply, when set, answers Core's configuration route first.
	mu        sync.Mutex
	coreReply func(w http.ResponseWriter, r *http.Request) bool
	// out is the operator's output of the last run.
	out bytes.Buffer
}

const fixtureToken = "enroll-3c9e1f7a22"

func newRunFixture(t *testing.T) *runFixture {
	t.Helper()
	h := fakehost.New(t, "oac-install-run-", "etc/systemd/system", "var/lib", "var/run", "run/systemd/system")
	base := h.Base
	f := &runFixture{base: base, host: h.Host, token: fixtureToken, version: "test-1", machine: "x86_64",
		accts: h.Accounts, systemd: h.Systemd}
	l, err := net.Listen("unix", filepath.Join(f.host.Root, "var/run/docker.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	os.Chown(filepath.Join(f.host.Root, "var/run/docker.sock"), 0, 4242)
	os.Chmod(filepath.Join(f.host.Root, "var/run/docker.sock"), 0o660)

	rel := generationtest.BuildRelease(t, generationtest.CommitA)
	f.spec = rel.Spec(t, release.ProviderDocker, 2)
	payload := filepath.Join(base, "payload")
	if err := console.Publish(payload, console.ReleaseFiles{Files: rel.Files, Artifacts: rel.Artifacts}); err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewUnstartedServer(nil)
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	f.ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.srv.Certificate().Raw})
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/sandbox-node/configuration", f.configuration)
	mux.HandleFunc("/api/v1/sandbox-node/identity", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"node_id": generationtest.NodeID, "installation_id": generationtest.InstallationID,
			"provider": "docker", "deployment_generation": 1, "specification_digest": f.spec.Digest(), "connected": true, "provider_ready": true})
	})
	mux.Handle("/node-install/", console.Handler(payload, f.srv.Listener.Addr().String()))
	for _, name := range []string{release.ManifestName, release.SumsName} {
		data := rel.Files[name]
		mux.HandleFunc("/node-install/"+name, func(w http.ResponseWriter, r *http.Request) { w.Write(data) })
	}
	f.srv.Config.Handler = mux

	f.engine = &dockertest.FileEngine{Path: filepath.Join(h.EngineDir(), "state.json")}
	f.children = asaccount.NewChildren(privsep.Options{Binary: h.Binary, Home: f.host.Home()}, h.DBs)
	f.child = f.children.Run
	return f
}

// configuration is Core's configuration route: the enrollment token, or
// the node credential with the node id.
func (f *runFixture) configuration(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	reply := f.coreReply
	f.mu.Unlock()
	if reply != nil && reply(w, r) {
		return
	}
	auth, node := r.Header.Get("Authorization"), r.Header.Get("X-OAC-Node-ID")
	if !(auth == "Bearer "+fixtureToken && node == "") && !(auth == "Bearer "+generationtest.Credential && node == generationtest.NodeID) {
		http.Error(w, `{"error":{"code":"invalid_node_credential"}}`, http.StatusUnauthorized)
		return
	}
	w.Write(f.configurationBody(nil))
}

// configurationBody is Core's answer, with edit applied to its fields.
func (f *runFixture) configurationBody(edit func(map[string]any)) []byte {
	raw, _ := f.spec.MarshalJSON()
	m := map[string]any{
		"installation_id": generationtest.InstallationID, "provider": f.spec.Provider, "core_url": f.srv.URL, "generation": 1,
		"specification": json.RawMessage(raw), "specification_digest": f.spec.Digest(), "max_active": 2, "max_retained": 4,
	}
	if edit != nil {
		edit(m)
	}
	data, _ := json.Marshal(m)
	return data
}

func (f *runFixture) setCoreReply(h func(w http.ResponseWriter, r *http.Request) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.coreReply = h
}

func (f *runFixture) options() Options {
	return Options{InstallationID: generationtest.InstallationID, SourceURL: f.srv.URL, CoreURL: f.srv.URL, CoreCA: f.ca}
}

func (f *runFixture) command() Command {
	f.out.Reset()
	return Command{
		Options: f.options(), Host: f.host, Token: f.token, Environ: f.environ, Machine: f.machine,
		Core:   CoreReader{Roots: trust.Only(mustPool(f.ca))},
		Engine: f.engine, Accounts: f.accts, Systemd: f.systemd, Child: f.child, EndChild: f.children.Close, Version: f.version, Out: &f.out,
	}
}

// install runs install.Run with the fixture's command, edited by edit.
func (f *runFixture) install(t *testing.T, edit func(*Command)) (*workflow.Report, error) {
	t.Helper()
	c := f.command()
	if edit != nil {
		edit(&c)
	}
	return Run(context.Background(), c)
}

// installed runs a first installation to completion.
func (f *runFixture) installed(t *testing.T) {
	t.Helper()
	rep, err := f.install(t, nil)
	if err != nil {
		t.Fatalf("install: %v\n%s", err, f.out.String())
	}
	if rep.Condition != workflow.Complete {
		t.Fatalf("install: condition %s", rep.Condition)
	}
	f.token = ""
}

func (f *runFixture) engineState(t *testing.T) dockertest.FileState {
	t.Helper()
	st, err := f.engine.State()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (f *runFixture) registrations() int {
	data, _ := os.ReadFile(filepath.Join(f.base, "engine", "registrations"))
	return strings.Count(string(data), "\n")
}

// changingCalls are the calls of the account and systemd fakes that
// change the host.
func (f *runFixture) changingCalls() []string {
	var out []string
	out = append(out, f.accts.Calls()...)
	for _, c := range f.systemd.Calls() {
		if verb, _, _ := strings.Cut(c, " "); verb != "state" {
			out = append(out, c)
		}
	}
	return out
}

// tree records every entry below the host's /etc and /var/lib and the
// fake engine's directory: path, mode, owner, size, sha256 and link
// target; with times, also the inode, mtime and ctime.
func (f *runFixture) tree(t *testing.T, times bool) map[string]string {
	t.Helper()
	return treetest.SnapshotPaths(t, treetest.Options{Owner: true, Times: times},
		filepath.Join(f.host.Root, "etc"), filepath.Join(f.host.Root, "var/lib"), filepath.Join(f.base, "engine"))
}

// runCounters are the fakes' counts of what changed outside the tree.
func (f *runFixture) counters(t *testing.T) (calls int, loads int, regs int) {
	return len(f.changingCalls()), f.engineState(t).Loads, f.registrations()
}

var _ = docker.HostInfo{}

// A registered, healthy node's rerun needs no token and writes nothing:
// no journal, receipt, bookkeeping transaction or journal lock file; every
// entry keeps its inode, mtime and ctime. (The host lock, taken before
// anything is decided, is the one file it may create: CONTRACT §10.)
func TestRerunOfAHealthyNodeWritesNothing(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.installed(t)
	// Without the journal's lock file, so that creating it shows.
	locks := []string{JournalPath(f.host, generationtest.InstallationID) + ".lock"}
	for _, l := range locks {
		if err := os.Remove(l); err != nil {
			t.Fatal(err)
		}
	}
	before := f.tree(t, true)
	calls, loads, regs := f.counters(t)
	rep, err := f.install(t, nil)
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, f.out.String())
	}
	for _, l := range locks {
		if _, err := os.Lstat(l); err == nil {
			t.Errorf("the rerun created %s", l)
		}
	}
	if rep.Condition != workflow.Complete {
		t.Fatalf("rerun: condition %s", rep.Condition)
	}
	if d := generationtest.DiffHost(before, f.tree(t, true)); d != "" {
		t.Errorf("the rerun changed the host:\n%s", d)
	}
	if c, l, r := f.counters(t); c != calls || l != loads || r != regs {
		t.Errorf("the rerun called %v (loads %d->%d, registrations %d->%d)", f.changingCalls()[calls:], loads, l, regs, r)
	}
	if n := f.registrations(); n != 1 {
		t.Errorf("%d registrations", n)
	}
	if !strings.Contains(f.out.String(), "Core connection: connected") {
		t.Errorf("no summary:\n%s", f.out.String())
	}
}

// A run that installs says so; a rerun that finds every step satisfied and
// writes nothing says that nothing changed (k3s's "No change detected"),
// then the same summary, and does not claim to have installed.
func TestConvergedRerunSaysNoChange(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.installed(t)
	first := f.out.String()
	if !strings.Contains(first, "\n"+CompleteTitle+"\n") || strings.Contains(first, "No change") {
		t.Errorf("the first installation's output:\n%s", first)
	}
	f.out.Reset()
	rep, err := f.install(t, nil)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("rerun: %v %v\n%s", rep, err, f.out.String())
	}
	out := f.out.String()
	want := "\nNo change: the node is installed, registered and running.\n\nStatus\n  Core connection: connected\n"
	if !strings.Contains(out, want) || strings.Contains(out, CompleteTitle) {
		t.Errorf("the converged rerun's output lacks %q or says %q:\n%s", want, CompleteTitle, out)
	}
}

// Each run's report says what it did with the journal it found, for a
// command that reports it to a fleet tool: a first installation is fresh,
// a rerun that finds every step satisfied converged (and wrote nothing),
// and a rerun after a failure resumed the unfinished journal.
func TestRunReportSaysFreshResumedOrConverged(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	rep, err := f.install(t, nil)
	if err != nil || rep.Run != workflow.RunFresh {
		t.Fatalf("first installation: %+v %v\n%s", rep, err, f.out.String())
	}
	f.token = ""
	if rep, err = f.install(t, nil); err != nil || rep.Run != workflow.RunConverged {
		t.Fatalf("converged rerun: %+v %v\n%s", rep, err, f.out.String())
	}
	unit := "oac-node-" + generationtest.InstallationID + ".service"
	f.systemd.Stop(context.Background(), unit)
	f.systemd.Fail("start", unit, errors.New("the unit did not start"))
	if rep, err = f.install(t, nil); err == nil || rep == nil || rep.Run != workflow.RunFresh {
		t.Fatalf("a rerun that starts over and fails: %+v %v", rep, err)
	}
	f.systemd.Fail("start", unit, nil)
	f.out.Reset()
	var phases []string
	if rep, err = f.install(t, func(c *Command) { c.Phase = func(l string) { phases = append(phases, l) } }); err != nil || rep.Condition != workflow.Complete || rep.Run != workflow.RunResumed {
		t.Fatalf("the rerun after the failure: %+v %v\n%s", rep, err, f.out.String())
	}
	// The resumed run says where it resumes, and prints only the phases
	// of the steps it runs, each step under its own phase (after the
	// checks every run makes).
	if want := "\nResuming the interrupted installation at start (Start the node service): its "; !strings.Contains(f.out.String(), want) {
		t.Errorf("the resumed run does not say where it resumes (%q):\n%s", want, f.out.String())
	}
	want := []string{"Read Core's deployment specification", "Check host requirements", "Start the node service", "Wait for Core connection and provider readiness"}
	if got := slices.Compact(slices.Clone(phases)); !slices.Equal(got, want) {
		t.Errorf("the resumed run's phases: %q, want %q", phases, want)
	}
}

// Each state belongs to the phase of the nearest labelled state at or
// before it, so that a run resumed inside a phase prints its heading.
func TestEveryStateHasItsPhase(t *testing.T) {
	m := statePhases(workflow.InstallDefinition())
	for state, want := range map[workflow.State]string{
		workflow.InstallAccount: "Prepare the service account", "downloads": "Download and verify node files",
		"helper": "Download and verify node files", "network": "Check the sandbox runtime",
		"start": "Start the node service", "summary": "Wait for Core connection and provider readiness", "preflight": "",
	} {
		if got, ok := m[state]; !ok || got != want {
			t.Errorf("state %s: phase %q (%v), want %q", state, got, ok, want)
		}
	}
}
