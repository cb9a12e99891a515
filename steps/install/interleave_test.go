package install_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/host/systemd/systemdtest"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/testsupport/fakehost"
	"github.com/openagentcore/oac-node-install/steps/uninstall"
	"github.com/openagentcore/oac-node-install/workflow"
)

// The install and uninstall commands on one host: each decides under the
// host lock, from root's records, so neither acts on what the other
// removed or made meanwhile.

const id = generationtest.InstallationID

// syncBuffer is an output written by a command in another goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitFor polls s until it holds want.
func waitFor(t *testing.T, what string, s func() string, want string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(s(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never said %q: %q", what, want, s())
		}
	}
}

// pausingSystemd stops units as the fake does, then, at the first stop,
// says so on stopped and waits until resume is closed: an uninstall
// paused while it holds the host lock.
type pausingSystemd struct {
	*systemdtest.Fake
	once            *sync.Once
	stopped, resume chan struct{}
}

func (s pausingSystemd) Stop(ctx context.Context, unit string) error {
	err := s.Fake.Stop(ctx, unit)
	s.once.Do(func() {
		close(s.stopped)
		<-s.resume
	})
	return err
}

// inProcessChild runs the uninstall's service-account steps in this
// process (the install test binary serves no uninstall child), counting
// them.
func inProcessChild(h layout.Host, engine *dockertest.FileEngine, n *atomic.Int32) asaccount.Runner {
	return func(ctx context.Context, req asaccount.Request) (asaccount.Answer, error) {
		n.Add(1)
		u, err := accounts.Under(h.Root).LookupUser(layout.Account)
		if err != nil {
			return asaccount.Answer{}, err
		}
		return uninstall.RunStep(ctx, uninstall.NodeOptions{Home: h.Home(), UID: u.UID,
			Docker: func(context.Context, string) (uninstall.Networks, error) { return engine, nil }}, req)
	}
}

// uninstallCommand is the uninstall command on f's host.
func uninstallCommand(f *install.RunFixture, force bool, out *syncBuffer, children *atomic.Int32) uninstall.Command {
	return uninstall.Command{Options: uninstall.Options{InstallationID: id, Force: force}, Host: f.HostPaths(),
		Accounts: f.AccountsFake(), Systemd: f.SystemdFake(), Child: inProcessChild(f.HostPaths(), f.Engine(), children),
		Running: func(int) (bool, error) { return false, nil }, Version: "test", Out: out}
}

// nothingOfTheNode fails the test for each thing of the node on the host:
// the account, root's records and journal, the unit, the node's files,
// its Docker network.
func nothingOfTheNode(t *testing.T, f *install.RunFixture) {
	t.Helper()
	h := f.HostPaths()
	if _, err := accounts.Under(h.Root).LookupUser(layout.Account); !errors.Is(err, accounts.ErrNotFound) {
		t.Errorf("the account oac-node exists: %v", err)
	}
	for _, p := range []string{h.Record(id), h.Bookkeeping(), h.EtcDir(), install.JournalPath(h, id), h.Unit(id), h.EnvFile(id),
		h.DockerConfig(), h.NodeRoot(id), h.Home()} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists: %v", p, err)
		}
	}
	st, err := f.Engine().State()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Nets[docker.NetworkName(id)]; ok {
		t.Errorf("the node's Docker network exists")
	}
}

// A rerun without a token started while `--uninstall --force` holds the
// host lock waits for it, then finds the installation gone and refuses,
// needing the enrollment token, with nothing made again: no account,
// record, bookkeeping, journal, unit, node file or network. (Deciding
// before the lock, it took the node for installed and, once the lock was
// free, made everything again right after "uninstalled".)
func TestARerunWithoutATokenDuringUninstallForce(t *testing.T) {
	f := install.NewRunFixture(t)
	f.Installed(t)
	var uchildren, ichildren atomic.Int32
	uout := &syncBuffer{}
	uc := uninstallCommand(f, true, uout, &uchildren)
	sd := pausingSystemd{Fake: f.SystemdFake(), once: &sync.Once{}, stopped: make(chan struct{}), resume: make(chan struct{})}
	uc.Systemd = sd
	udone := make(chan error, 1)
	go func() {
		_, err := uninstall.Run(context.Background(), uc)
		udone <- err
	}()
	select {
	case <-sd.stopped:
	case err := <-udone:
		t.Fatalf("the uninstall ended before it stopped the unit: %v\n%s", err, uout.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the uninstall never stopped the unit")
	}

	phases := &syncBuffer{}
	rdone := make(chan error, 1)
	go func() {
		_, err := f.Install(t, func(c *install.Command) {
			c.Token = ""
			c.Phase = func(label string) { phases.Write([]byte(label + "\n")) }
			child := c.Child
			c.Child = func(ctx context.Context, req asaccount.Request) (asaccount.Answer, error) {
				ichildren.Add(1)
				return child(ctx, req)
			}
		})
		rdone <- err
	}()
	waitFor(t, "the rerun", phases.String, "Wait for another node installation or uninstallation")
	time.Sleep(200 * time.Millisecond) // time to do what it must not
	if n := ichildren.Load(); n != 0 {
		t.Errorf("the waiting rerun ran %d service-account children", n)
	}
	close(sd.resume)
	if err := <-udone; err != nil {
		t.Fatalf("uninstall --force: %v\n%s", err, uout.String())
	}
	if !strings.Contains(uout.String(), "is uninstalled from this host") {
		t.Errorf("the uninstall's output:\n%s", uout.String())
	}
	var err error
	select {
	case err = <-rdone:
	case <-time.After(60 * time.Second):
		t.Fatal("the rerun did not end")
	}
	if err == nil || !strings.Contains(err.Error(), "not installed yet: the command needs the enrollment token") {
		t.Fatalf("the rerun: %v, want the refusal that needs the token", err)
	}
	if n := ichildren.Load(); n != 0 {
		t.Errorf("the rerun ran %d service-account children", n)
	}
	nothingOfTheNode(t, f)
}

// The recoveries that install's and uninstall's refusals name for an
// account deleted by hand work: uninstall refuses without --force and,
// with it, removes root's records and changes no account; then, once the
// operator removed what the uninstall kept (as printed), the node is
// installed again with a new token.
func TestAnAccountDeletedByHandIsRecoveredByUninstallForce(t *testing.T) {
	for _, reused := range []bool{false, true} {
		t.Run(map[bool]string{false: "its uid free", true: "its uid reused"}[reused], func(t *testing.T) {
			f := install.NewRunFixture(t)
			f.Installed(t)
			h := f.HostPaths()
			if err := f.AccountsFake().DeleteServiceAccount(context.Background()); err != nil {
				t.Fatal(err)
			}
			if reused {
				appendLine(t, filepath.Join(h.Root, "etc/group"), "alice:x:1000:")
				appendLine(t, filepath.Join(h.Root, "etc/passwd"), "alice:x:999:1000::/home/alice:/bin/bash")
			}
			if _, err := f.Install(t, nil); !errors.Is(err, accounts.ErrNotRecorded) || !strings.Contains(err.Error(), "--uninstall --installation-id "+id+" --force") {
				t.Fatalf("install: %v, want the account refusal naming uninstall --force", err)
			}
			var children atomic.Int32
			out := &syncBuffer{}
			if _, err := uninstall.Run(context.Background(), uninstallCommand(f, false, out, &children)); !errors.Is(err, accounts.ErrNotRecorded) {
				t.Fatalf("uninstall: %v, want the account refusal", err)
			}
			calls := len(f.AccountsFake().Calls())
			rep, err := uninstall.Run(context.Background(), uninstallCommand(f, true, out, &children))
			if err != nil || rep.Condition != workflow.Complete {
				t.Fatalf("uninstall --force: %v\n%s", err, out.String())
			}
			if c := f.AccountsFake().Calls(); len(c) != calls || children.Load() != 0 {
				t.Errorf("uninstall --force changed accounts %v or ran %d children", c[calls:], children.Load())
			}
			if _, err := os.Lstat(h.Home()); (err == nil) != reused {
				t.Errorf("the home after uninstall --force: %v; want it kept: %v", err, reused)
			}
			// The operator removes what was kept, as printed.
			if reused {
				if !strings.Contains(out.String(), "sudo rm -rf /var/lib/oac-node") {
					t.Errorf("the output does not name the home's removal:\n%s", out.String())
				}
				if err := os.RemoveAll(h.Home()); err != nil {
					t.Fatal(err)
				}
			}
			if !strings.Contains(out.String(), "sudo docker network rm "+docker.NetworkName(id)) {
				t.Errorf("the output does not name the network's removal:\n%s", out.String())
			}
			if err := f.Engine().NetworkRemove(context.Background(), docker.NetworkName(id)); err != nil {
				t.Fatal(err)
			}
			nothingOfTheNode(t, f)

			// The node added again: a new token. (The fake engine's files,
			// which the first account made, are opened by the new one.)
			if err := filepath.Walk(fakehost.EngineDir(h.Home()), func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					err = os.Chmod(p, 0o666)
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
			rep, err = f.Install(t, func(c *install.Command) { c.Token = "enroll-3c9e1f7a22" })
			if err != nil || rep.Condition != workflow.Complete {
				t.Fatalf("the new installation: %v", err)
			}
			u, err := accounts.Under(h.Root).LookupUser(layout.Account)
			if err != nil || (reused && u.UID == 999) {
				t.Errorf("the new account %+v %v", u, err)
			}
		})
	}
}

func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}
