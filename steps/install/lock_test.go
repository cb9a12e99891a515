package install

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/accounts/accountstest"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// The install command decides under the host lock (CONTRACT §10,
// "Decisions under the lock"): these tests hold the lock, or block the
// command that holds it, and look at what the other command did meanwhile.

// countCore counts Core's configuration requests and lets them through.
func (f *runFixture) countCore() *atomic.Int32 {
	var n atomic.Int32
	f.setCoreReply(func(w http.ResponseWriter, r *http.Request) bool {
		n.Add(1)
		return false
	})
	return &n
}

// phases collects the labels a run announces, safely for a run in
// another goroutine; waitFor blocks until one of them contains s.
type phases struct {
	mu  sync.Mutex
	got []string
	ch  chan struct{}
}

func newPhases() *phases { return &phases{ch: make(chan struct{}, 64)} }

func (p *phases) add(label string) {
	p.mu.Lock()
	p.got = append(p.got, label)
	p.mu.Unlock()
	p.ch <- struct{}{}
}

func (p *phases) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		p.mu.Lock()
		for _, g := range p.got {
			if strings.Contains(g, s) {
				p.mu.Unlock()
				return
			}
		}
		p.mu.Unlock()
		select {
		case <-p.ch:
		case <-deadline:
			t.Fatalf("no phase %q: %v", s, p.got)
		}
	}
}

// refusesUnchanged runs the install command edited by edit and checks that
// it refuses with a message holding every want and ending "Nothing was
// changed.", and that it changed nothing: the tree with times, the
// account and systemd calls. It returns the refusal.
func (f *runFixture) refusesUnchanged(t *testing.T, edit func(*Command), want ...string) error {
	t.Helper()
	before := f.tree(t, true)
	calls := len(f.changingCalls())
	_, err := f.install(t, edit)
	if err == nil || !strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
		t.Fatalf("install: %v, want a refusal that changed nothing", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the refusal lacks %q: %v", w, err)
		}
	}
	if d := generationtest.DiffHost(before, f.tree(t, true)); d != "" {
		t.Errorf("the refusal changed:\n%s", d)
	}
	if c := f.changingCalls(); len(c) != calls {
		t.Errorf("the refusal called %v", c[calls:])
	}
	return err
}

// editIdentity rewrites the node's identity.json, as the service account
// can, with edit applied to its document.
func (f *runFixture) editIdentity(t *testing.T, edit func(doc map[string]any)) {
	t.Helper()
	node := layout.Node{Root: layout.NodeRootIn(f.host.Home(), generationtest.InstallationID)}
	data, err := os.ReadFile(node.Identity())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	data, _ = json.Marshal(doc)
	if err := os.WriteFile(node.Identity(), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// While another command holds the host lock, an install says that it
// waits and reads nothing of Core's (the configuration, the node's
// answer) and runs no service-account child: it decides once it holds the
// lock.
func TestInstallWaitsForTheHostLockBeforeItDecides(t *testing.T) {
	f := newRunFixture(t)
	core := f.countCore()
	lock, err := safefile.TryLock(f.host.HostLock(), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ph := newPhases()
	var children atomic.Int32
	done := make(chan error, 1)
	go func() {
		_, err := f.install(t, func(c *Command) {
			c.Phase = ph.add
			child := c.Child
			c.Child = func(ctx context.Context, req asaccount.Request) (asaccount.Answer, error) {
				children.Add(1)
				return child(ctx, req)
			}
		})
		done <- err
	}()
	ph.waitFor(t, "Wait for another node installation")
	// The command is now blocked on the lock; give it time to do what it
	// must not.
	time.Sleep(200 * time.Millisecond)
	if n := core.Load(); n != 0 {
		t.Errorf("the waiting install read Core's configuration %d times", n)
	}
	if n := children.Load(); n != 0 {
		t.Errorf("the waiting install ran %d service-account children", n)
	}
	lock.Unlock()
	if err := <-done; err != nil {
		t.Fatalf("install after the lock was released: %v\n%s", err, f.out.String())
	}
	if core.Load() == 0 {
		t.Error("the install never read Core's configuration")
	}
}

// Two installations for two Cores started together: the one that holds
// the lock completes, the other, waiting meanwhile, then finds the first
// one's record and refuses (one Core per host), with nothing changed.
func TestTwoCoresStartedTogetherOneInstalls(t *testing.T) {
	f := newRunFixture(t)
	const otherID = "0b9c6f1e-5d2a-4c8e-9f3b-7a1d2e4c6b80"
	const otherToken = "enroll-other-core"
	release := make(chan struct{})
	var released sync.Once
	unblock := func() { released.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the server's Close, which waits for the blocked request
	var first sync.Once
	blocked := make(chan struct{})
	f.setCoreReply(func(w http.ResponseWriter, r *http.Request) bool {
		switch r.Header.Get("Authorization") {
		case "Bearer " + otherToken:
			w.Write(f.configurationBody(func(m map[string]any) { m["installation_id"] = otherID }))
			return true
		case "Bearer " + fixtureToken:
			// The first install's first read waits until the second
			// install is started.
			first.Do(func() { close(blocked); <-release })
		}
		return false
	})
	firstDone := make(chan error, 1)
	go func() {
		_, err := f.install(t, nil)
		firstDone <- err
	}()
	<-blocked
	var out bytes.Buffer
	ph := newPhases()
	secondDone := make(chan error, 1)
	go func() {
		_, err := f.install(t, func(c *Command) {
			c.Options.InstallationID = otherID
			c.Token = otherToken
			c.Out = &out
			c.Phase = ph.add
		})
		secondDone <- err
	}()
	ph.waitFor(t, "Wait for another node installation")
	unblock()
	if err := <-firstDone; err != nil {
		t.Fatalf("the first install: %v", err)
	}
	err := <-secondDone
	var ref *Refusal
	if !errors.As(err, &ref) || !strings.Contains(err.Error(), "another Core") || !strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
		t.Fatalf("the second install: %v, want the one-Core-per-host refusal", err)
	}
	for _, p := range []string{f.host.Record(otherID), JournalPath(f.host, otherID)} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("the refused install wrote %s", p)
		}
	}
	if _, err := os.Lstat(f.host.Record(generationtest.InstallationID)); err != nil {
		t.Errorf("the first install's record: %v", err)
	}
}

// On a host that fails a check needing no token (SELinux enforcing here),
// the install refuses before it reads the token or asks Core.
func TestHostChecksComeBeforeTheToken(t *testing.T) {
	f := newRunFixture(t)
	core := f.countCore()
	if err := os.MkdirAll(filepath.Join(f.host.Root, "sys/fs/selinux"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.host.Root, "sys/fs/selinux/enforce"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := 0
	_, err := f.install(t, func(c *Command) {
		c.Token = ""
		c.ReadToken = func() (string, error) { read++; return fixtureToken, nil }
	})
	if err == nil || !strings.Contains(err.Error(), "SELinux is enforcing") || !strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
		t.Fatalf("err %v, want the SELinux refusal", err)
	}
	if read != 0 {
		t.Errorf("the token was read %d times before the refusal", read)
	}
	if n := core.Load(); n != 0 {
		t.Errorf("Core was asked %d times before the refusal", n)
	}
	// Without SELinux the same command reads the token once and installs.
	os.Remove(filepath.Join(f.host.Root, "sys/fs/selinux/enforce"))
	rep, err := f.install(t, func(c *Command) {
		c.Token = ""
		c.ReadToken = func() (string, error) { read++; return fixtureToken, nil }
	})
	if err != nil || rep.Condition != workflow.Complete || read != 1 {
		t.Fatalf("install: %v, read the token %d times", err, read)
	}
}

// A token that cannot be one refuses once the host checks passed, before
// the host lock and Core: nothing is changed, the lock file not created.
func TestBadTokensRefuseBeforeTheLock(t *testing.T) {
	for _, tc := range []struct{ name, token, want string }{
		{"empty", "", "standard input: the enrollment token is empty; run the command Web generated"},
		{"white space", "a b", "the enrollment token holds white space or a control character"},
		{"control character", "a\x1bb", "the enrollment token holds white space or a control character"},
		{"too long", strings.Repeat("t", 4097), "the enrollment token is longer than 4096 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRunFixture(t)
			core := f.countCore()
			before := f.tree(t, true)
			_, err := f.install(t, func(c *Command) {
				c.Token = ""
				c.ReadToken = func() (string, error) { return tc.token, nil }
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
				t.Fatalf("err %v, want a refusal saying %q", err, tc.want)
			}
			if n := core.Load(); n != 0 {
				t.Errorf("Core was asked %d times", n)
			}
			if _, err := os.Lstat(f.host.HostLock()); err == nil {
				t.Error("the refusal took the host lock")
			}
			if d := generationtest.DiffHost(before, f.tree(t, true)); d != "" {
				t.Errorf("the refusal changed:\n%s", d)
			}
		})
	}
}

// A rerun on a host whose installer.db is damaged refuses under the lock,
// before any change, naming the damage and the recovery; so does a new
// installation's first run.
func TestInstallRefusesADamagedBookkeeping(t *testing.T) {
	for _, installed := range []bool{true, false} {
		t.Run(map[bool]string{true: "rerun", false: "new node"}[installed], func(t *testing.T) {
			f := newRunFixture(t)
			if installed {
				f.installed(t)
				data, err := os.ReadFile(f.host.Bookkeeping())
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f.host.Bookkeeping(), data[:len(data)/8], 0o600); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := os.MkdirAll(f.host.EtcDir(), 0o755); err != nil {
					t.Fatal(err)
				}
				// Not bbolt's, and not empty: an empty file alone is the
				// first run's own (TestInstallMakesAnEmptyBookkeepingAnew).
				if err := os.WriteFile(f.host.Bookkeeping(), bytes.Repeat([]byte{0xff}, 4096), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			core := f.countCore()
			before := f.tree(t, true)
			_, err := f.install(t, nil)
			if err == nil || !strings.Contains(err.Error(), "installer bookkeeping is damaged") || !strings.Contains(err.Error(), "--force") ||
				!strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
				t.Fatalf("install: %v, want the damage refusal", err)
			}
			if d := generationtest.DiffHost(before, f.tree(t, true)); d != "" {
				t.Errorf("the refusal changed:\n%s", d)
			}
			if n := core.Load(); n != 0 {
				t.Errorf("Core was asked %d times", n)
			}
		})
	}
}

// An empty installer.db, alone in /etc/oac-node, is what a first run
// leaves when the disk fills as it creates the file: it held nothing, so
// the rerun makes it anew and completes, instead of refusing it as
// damaged at every rerun.
func TestInstallMakesAnEmptyBookkeepingAnew(t *testing.T) {
	f := newRunFixture(t)
	if err := os.MkdirAll(f.host.EtcDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.host.Bookkeeping(), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := f.install(t, nil)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("install: %v\n%s", err, f.out.String())
	}
	if u := f.nodeAccount(t); u.UID <= 0 {
		t.Errorf("the account: %+v", u)
	}
}

// The node's credential goes only to the Core root recorded: an account
// that points identity.json at a server of its own (and removes
// registered.json) gets no request there; root's rerun refuses before any
// change.
func TestTheCredentialGoesOnlyToTheRecordedCore(t *testing.T) {
	f := newRunFixture(t)
	f.installed(t)
	var hostile atomic.Int32
	evil := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hostile.Add(1)
		w.Write(f.configurationBody(nil))
	}))
	defer evil.Close()
	f.editIdentity(t, func(doc map[string]any) { doc["core_url"] = evil.URL })
	os.Remove(layout.Node{Root: f.host.NodeRoot(generationtest.InstallationID)}.Registered())
	f.refusesUnchanged(t, nil, "goes only to the recorded Core")
	if n := hostile.Load(); n != 0 {
		t.Errorf("the account's server got %d requests with the node's credential", n)
	}
}

// A known node's provider is the one root recorded: a rerun whose Core
// answer names another provider refuses before any change, naming the way
// to move the node — also when the account edited identity.json to agree
// with that answer.
func TestAKnownNodeKeepsItsRecordedProvider(t *testing.T) {
	f := newRunFixture(t)
	f.installed(t)
	rel := generationtest.BuildRelease(t, generationtest.CommitA)
	msb := rel.Spec(t, "microsandbox", 2)
	raw, _ := msb.MarshalJSON()
	f.editIdentity(t, func(doc map[string]any) {
		ident := doc["identity"].(map[string]any)
		ident["provider"], ident["specification_digest"] = "microsandbox", msb.Digest()
	})
	f.setCoreReply(func(w http.ResponseWriter, r *http.Request) bool {
		w.Write(f.configurationBody(func(m map[string]any) {
			m["provider"], m["specification"], m["specification_digest"] = "microsandbox", json.RawMessage(raw), msb.Digest()
		}))
		return true
	})
	f.refusesUnchanged(t, nil, "installed for docker", "--uninstall")
}

// Re-pasting the Web command on a registered node: its token is spent
// (Core answers 401 to it), and the rerun does not use it — it reads
// Core's configuration with the node's credential, says that the token was
// not needed, and completes.
func TestARepastedCommandOnARegisteredNodeNeedsNoToken(t *testing.T) {
	f := newRunFixture(t)
	f.installed(t)
	var tokenReads atomic.Int32
	f.setCoreReply(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") == "Bearer "+fixtureToken {
			tokenReads.Add(1)
			http.Error(w, `{"error":{"code":"invalid_enrollment_token"}}`, http.StatusUnauthorized)
			return true
		}
		return false
	})
	rep, err := f.install(t, func(c *Command) { c.Token = fixtureToken })
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("rerun with the spent token: %v\n%s", err, f.out.String())
	}
	if !strings.Contains(f.out.String(), "The enrollment token was not needed") {
		t.Errorf("the rerun does not say that the token was not needed:\n%s", f.out.String())
	}
	if n := tokenReads.Load(); n != 0 {
		t.Errorf("the spent token was sent to Core %d times", n)
	}
	if n := f.registrations(); n != 1 {
		t.Errorf("%d registrations", n)
	}
}

// After Core's 409 sandbox_node_address_mismatch the node never
// registered: root's records of it (the host record, the bookkeeping
// entry, the journal) go with the node root's unregistered state, so the
// new command Web generates installs.
func TestAnAddressMismatchDiscardsRootsRecords(t *testing.T) {
	f := newRunFixture(t)
	if err := os.WriteFile(filepath.Join(engineDir(f.host.Home()), "mismatch-register"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	_, err := f.install(t, nil)
	if err == nil || !strings.Contains(err.Error(), "generate a new command in Web") {
		t.Fatalf("install: %v, want the address mismatch", err)
	}
	if _, err := os.Lstat(f.host.Record(generationtest.InstallationID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the host record stayed: %v", err)
	}
	if _, err := os.Lstat(JournalPath(f.host, generationtest.InstallationID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the install journal stayed: %v", err)
	}
	if known, err := Registered(f.host, generationtest.InstallationID); err != nil || known {
		t.Errorf("registered %v, %v", known, err)
	}
	db, err := bookkeeping.OpenReadOnly(f.host.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	_, gerr := db.GetInstallation(generationtest.InstallationID)
	acct, ok, _ := db.Account()
	db.Close()
	if !errors.Is(gerr, bookkeeping.ErrNotFound) {
		t.Errorf("the bookkeeping entry stayed: %v", gerr)
	}
	if !ok || !acct.Created {
		t.Errorf("the account's record went: %+v %v", acct, ok)
	}
	// The new command (a new token) installs.
	rep, err := f.install(t, nil)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("the new command: %v\n%s", err, f.out.String())
	}
}

// A registration cut off after Core accepted it (identity.json written,
// the answer lost) is finished by a rerun without a token — the node
// program confirms the identity it wrote — and by a rerun with the spent
// token, whose configuration read then uses the node's credential; Core
// enrolls the node once.
func TestAnInterruptedRegistrationIsFinishedByAnyRerun(t *testing.T) {
	for _, withToken := range []bool{false, true} {
		t.Run(map[bool]string{false: "without a token", true: "with the spent token"}[withToken], func(t *testing.T) {
			f := newRunFixture(t)
			if err := os.WriteFile(filepath.Join(engineDir(f.host.Home()), "lose-register-answer"), nil, 0o666); err != nil {
				t.Fatal(err)
			}
			if _, err := f.install(t, nil); err == nil {
				t.Fatal("the first run did not fail at the register step")
			}
			if n := f.registrations(); n != 1 {
				t.Fatalf("%d registrations after the lost answer", n)
			}
			if withToken {
				f.setCoreReply(func(w http.ResponseWriter, r *http.Request) bool {
					if r.Header.Get("Authorization") == "Bearer "+fixtureToken {
						http.Error(w, `{"error":{"code":"invalid_enrollment_token"}}`, http.StatusUnauthorized)
						return true
					}
					return false
				})
			}
			rep, err := f.install(t, func(c *Command) {
				if !withToken {
					c.Token = ""
				}
			})
			if err != nil || rep.Condition != workflow.Complete {
				t.Fatalf("the rerun: %v\n%s", err, f.out.String())
			}
			if n := f.registrations(); n != 1 {
				t.Errorf("%d registrations, want 1", n)
			}
		})
	}
}

// A registered node whose file other than the node program differs (its
// seccomp profile here) is refused by the read-only check: no journal,
// record, bookkeeping transaction or lock file of the journal is written.
func TestARegisteredNodesChangedFileRefusesBeforeAnyWrite(t *testing.T) {
	f := newRunFixture(t)
	f.installed(t)
	p := filepath.Join(f.host.NodeRoot(generationtest.InstallationID), "runtime", "seccomp.json")
	if err := os.WriteFile(p, []byte(`{"defaultAction":"SCMP_ACT_ALLOW","changed":true}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.refusesUnchanged(t, nil, "runtime/seccomp.json differs", "--uninstall")
}

// Root's two records disagreeing — the bookkeeping lists the installation,
// its host record is gone — refuse before any change, naming the recovery;
// neither is taken for the truth.
func TestAMissingHostRecordRefuses(t *testing.T) {
	f := newRunFixture(t)
	f.installed(t)
	if err := os.Remove(f.host.Record(generationtest.InstallationID)); err != nil {
		t.Fatal(err)
	}
	f.refusesUnchanged(t, func(c *Command) { c.Token = fixtureToken }, "host record", "--force")
}

// registered.json without identity.json (the credential gone) refuses
// before any change, naming the recovery.
func TestARegisteredNodeWithoutItsIdentityRefuses(t *testing.T) {
	f := newRunFixture(t)
	f.installed(t)
	node := layout.Node{Root: layout.NodeRootIn(f.host.Home(), generationtest.InstallationID)}
	if err := os.Remove(node.Identity()); err != nil {
		t.Fatal(err)
	}
	f.refusesUnchanged(t, nil, "identity.json", "--uninstall --force")
}

// A host lock path that is not a regular file — a directory, a FIFO, a
// symbolic link — is refused before any change, naming what is there and
// the command that removes it.
func TestInstallRefusesAHostLockThatIsNotAFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(path string) error
		what string
	}{
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }, "a directory"},
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o600) }, "a FIFO"},
		{"symlink", func(p string) error { return os.Symlink("/dev/null", p) }, "a symbolic link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRunFixture(t)
			p := f.host.HostLock()
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := tc.make(p); err != nil {
				t.Fatal(err)
			}
			f.refusesUnchanged(t, nil, p, tc.what, "sudo rm")
		})
	}
}

// lockRemover removes the host lock file once useradd ran, as an
// operator's `rm /run/oac-node.lock` during an install would.
type lockRemover struct {
	*accountstest.Fake
	path string
}

func (l lockRemover) CreateServiceAccount(ctx context.Context, shell string) error {
	if err := l.Fake.CreateServiceAccount(ctx, shell); err != nil {
		return err
	}
	return os.Remove(l.path)
}

// The host lock file removed while an install holds it: another command
// could take a new lock at that path meanwhile, so the install stops
// before its next step, naming the lock; the rerun completes.
func TestInstallStopsWhenItsHostLockIsReplaced(t *testing.T) {
	f := newRunFixture(t)
	_, err := f.install(t, func(c *Command) { c.Accounts = lockRemover{f.accts, f.host.HostLock()} })
	if !errors.Is(err, safefile.ErrLockReplaced) || !strings.Contains(err.Error(), "the host lock") {
		t.Fatalf("install: %v, want the host lock's replacement\n%s", err, f.out.String())
	}
	if f.systemd.Enabled(layout.UnitName(generationtest.InstallationID)) {
		t.Error("the install went on to enable the unit")
	}
	rep, err := f.install(t, nil)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("the rerun: %v\n%s", err, f.out.String())
	}
}
