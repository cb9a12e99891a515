package uninstall

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
)

// A damaged installer.db (empty, truncated, garbled) makes uninstall refuse
// before its first change — the unit still enabled, nothing removed —
// naming the damage and the recovery; the recovery it names (the file kept
// aside, then --force) removes the node and keeps the account, whose
// record of being the installer's is gone.
func TestUninstallRefusesADamagedBookkeeping(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"empty", func([]byte) []byte { return nil }},
		{"truncated", func(b []byte) []byte { return b[:len(b)/8] }},
		{"meta pages garbled", func(b []byte) []byte {
			for _, off := range []int{16, 4096 + 16} {
				b[off] ^= 0xff
			}
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newHostFixture(t)
			f.install(t)
			db := f.host.Bookkeeping()
			data, err := os.ReadFile(db)
			must(t, err)
			must(t, os.WriteFile(db, tc.damage(data), 0o600))
			before := treetest.Snapshot(t, f.host.Root, treetest.Options{})
			_, err = f.uninstall(t, false)
			if !errors.Is(err, bookkeeping.ErrDamaged) || !strings.Contains(err.Error(), "installer.db.damaged") ||
				!strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
				t.Fatalf("uninstall: %v, want the damage refusal with its recovery", err)
			}
			if d := generationtest.DiffHost(before, treetest.Snapshot(t, f.host.Root, treetest.Options{})); d != "" {
				t.Errorf("the refusal changed the host:\n%s", d)
			}
			if !f.systemd.Enabled(layout.UnitName(id)) || f.children.Load() != 0 {
				t.Errorf("the refusal stopped the unit or ran a child")
			}
			if _, err := f.uninstall(t, true); !errors.Is(err, bookkeeping.ErrDamaged) {
				t.Fatalf("uninstall --force: %v, want the damage refusal", err)
			}
			// The recovery the refusal names.
			must(t, os.Rename(db, db+".damaged"))
			rep, err := f.uninstall(t, true)
			if err != nil || rep.Condition != workflow.Complete {
				t.Fatalf("uninstall --force with the database kept aside: %v", err)
			}
			if _, err := f.dbs.LookupUser(layout.Account); err != nil {
				t.Errorf("the account went without its record: %v", err)
			}
			if _, err := os.Lstat(f.host.Record(id)); err == nil {
				t.Error("the host record stayed")
			}
		})
	}
}

// Whether the node registered is root's fact: an account that deletes
// identity.json and registered.json does not make uninstall skip Core's
// consent. Core still listing the node, uninstall refuses with nothing
// changed and names --force after the node's removal in Web.
func TestUninstallNeedsCoreWhenRootRecordsARegistration(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	f.status.Store(200)
	for _, rel := range []string{"registered.json", "state/node/identity.json"} {
		must(t, os.Remove(filepath.Join(f.host.NodeRoot(id), rel)))
	}
	before := treetest.Snapshot(t, f.host.Root, treetest.Options{})
	_, err := f.uninstall(t, false)
	if err == nil || !strings.Contains(err.Error(), "registered with Core") || !strings.Contains(err.Error(), "--force") ||
		!strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
		t.Fatalf("uninstall: %v, want a refusal asking for Core's consent", err)
	}
	if d := generationtest.DiffHost(before, treetest.Snapshot(t, f.host.Root, treetest.Options{})); d != "" {
		t.Errorf("the refusal changed the host:\n%s", d)
	}
	if !f.systemd.Enabled(layout.UnitName(id)) {
		t.Error("the refusal disabled the unit")
	}
	// After the node's removal in Web, --force removes it, but for the
	// microsandbox store Core did not confirm and the account holding it.
	if rep, err := f.uninstall(t, true); err != nil || rep.Condition != workflow.Incomplete || rep.AccountKept() != "store" {
		t.Fatalf("uninstall --force: %v %v", rep, err)
	}
}

// An empty installer.db alone in /etc/oac-node is what a first install
// leaves when the disk fills as it creates the file: it held nothing, so
// uninstall treats the host as one without bookkeeping (no record: the
// refusal names --force) and --force completes, instead of refusing the
// file as damaged at every attempt.
func TestUninstallTakesAnEmptyBookkeepingForNone(t *testing.T) {
	f := newHostFixture(t)
	must(t, os.MkdirAll(f.host.EtcDir(), 0o755))
	must(t, os.WriteFile(f.host.Bookkeeping(), nil, 0o600))
	_, err := f.uninstall(t, false)
	if err == nil || errors.Is(err, bookkeeping.ErrDamaged) || !strings.Contains(err.Error(), "--force") ||
		!strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
		t.Fatalf("uninstall: %v, want the no-record refusal", err)
	}
	if rep, err := f.uninstall(t, true); err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("uninstall --force: %v %v\n%s", rep, err, f.out.String())
	}
	if _, err := os.Lstat(f.host.Bookkeeping()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the empty installer.db stays after uninstall --force: %v", err)
	}
}
