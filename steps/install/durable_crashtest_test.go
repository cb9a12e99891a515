//go:build crashtest

package install

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Every change root's install steps make on the host is fsynced before
// the step is recorded done: the account databases and /etc after
// useradd and usermod (shadow-utils syncs nothing), the new home and its
// name in /var/lib, /etc/oac-node and its name, installer.db's name
// (bbolt syncs only the file), and the unit file's directory.
func TestInstallMakesItsHostChangesDurable(t *testing.T) {
	f := newHostFixture(t)
	r := f.host.Root
	w := safefile.WatchSyncs(
		filepath.Join(r, "etc/passwd"), filepath.Join(r, "etc/group"), filepath.Join(r, "etc"),
		f.host.Home(), filepath.Dir(f.host.Home()),
		f.host.EtcDir(), filepath.Join(r, "etc/systemd/system"),
	)
	rep, err := f.run(t)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("%v %v", rep, err)
	}
	for _, p := range w.Unsynced() {
		t.Errorf("the installation changed %s without fsync", p)
	}
}

// A step that finds its change already made (by an earlier run, which a
// power cut may have stopped before it synced) makes it durable before it
// reports done.
func TestInstallStepsMakeWhatTheyFindDurable(t *testing.T) {
	f := newHostFixture(t)
	rep, err := f.run(t)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("%v %v", rep, err)
	}
	ctx := context.Background()
	r := f.host.Root
	dbs := []string{filepath.Join(r, "etc/passwd"), filepath.Join(r, "etc/group"), filepath.Join(r, "etc")}
	id := generationtest.InstallationID
	verify := func(v workflow.Verifier) func() error {
		return func() error {
			out, _, err := v.Verify(ctx, workflow.Facts{})
			if err == nil && out != workflow.Done {
				t.Fatalf("verify: %v", out)
			}
			return err
		}
	}
	run := func(s workflow.Step) func() error {
		return func() error { _, err := s.Run(ctx, workflow.Facts{}); return err }
	}
	withProxy := proxy.FromEnviron([]string{"https_proxy=http://proxy.example:3128"})
	for _, tc := range []struct {
		name  string
		proxy proxy.Env
		call  func() error
		paths []string
	}{
		{"the account (run)", proxy.Env{}, run(accountStep{f.env}), append(dbs, f.host.Home(), filepath.Dir(f.host.Home()))},
		{"the account (verify)", proxy.Env{}, verify(accountStep{f.env}), dbs},
		{"the group membership (run)", proxy.Env{}, run(groupStep{f.env}), dbs},
		{"the group membership (verify)", proxy.Env{}, verify(groupStep{f.env}), dbs},
		{"the unit file", proxy.Env{}, run(unitStep{f.env}), []string{f.host.Unit(ident.InstallationID(id)), filepath.Dir(f.host.Unit(ident.InstallationID(id)))}},
		{"the removed env file", proxy.Env{}, run(envFileStep{f.env}), []string{f.host.EtcDir()}},
		{"the env file", withProxy, run(envFileStep{f.env}), []string{f.host.EnvFile(ident.InstallationID(id)), f.host.EtcDir()}},
	} {
		f.env.ProxyEnv = tc.proxy
		if tc.proxy != (proxy.Env{}) {
			// The file an earlier run wrote.
			if _, err := (envFileStep{f.env}).Run(ctx, nil); err != nil {
				t.Fatal(err)
			}
		}
		w := safefile.WatchSyncs(tc.paths...)
		if err := tc.call(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, p := range w.Unsynced() {
			t.Errorf("%s: found in place without fsync of %s", tc.name, p)
		}
	}
	if _, err := f.env.DBs.LookupUser(layout.Account); err != nil {
		t.Fatal(err)
	}
}

// /etc/oac-node is made durable with its name in /etc when it is created
// and when it is found (an earlier run may have created it unsynced).
func TestEnsureDirIsDurable(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "oac-node")
	for _, run := range []string{"creates", "finds"} {
		w := safefile.WatchSyncs(dir, parent)
		if err := ensureDir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, p := range w.Unsynced() {
			t.Errorf("ensureDir %s %s without fsync of %s", run, dir, p)
		}
	}
}

// The command on the host is written durably (its bytes and its name in
// /usr/local/sbin) before it is reported, and its removal is synced too.
func TestTheCommandOnTheHostIsDurable(t *testing.T) {
	h := commandHost(t)
	dir := filepath.Dir(h.Command())
	// The bytes are synced under the temporary name they are written to
	// (safefile.AtomicWrite), then renamed into place.
	w := safefile.WatchSyncs(filepath.Join(dir, ".oac-node-install.tmp"), dir)
	KeepCommand(h, bytes.NewReader([]byte("build 1")), "v1", io.Discard)
	for _, p := range w.Unsynced() {
		t.Errorf("the command was written without fsync of %s", p)
	}
	db, err := bookkeeping.Open(h.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w = safefile.WatchSyncs(dir)
	if err := RemoveCommand(db, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, p := range w.Unsynced() {
		t.Errorf("the command was removed without fsync of %s", p)
	}
}
