package install

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// foreignNetworkAtRun returns the fixture's child, except that when the
// network step runs (not its check) a Docker network of the node's name
// and of no installation appears first, as if made by someone else between
// the command's checks and the step: the service-account child refuses it
// at run time, after root's steps changed the host.
func (f *runFixture) foreignNetworkAtRun(t *testing.T) asaccount.Runner {
	return func(ctx context.Context, req asaccount.Request) (asaccount.Answer, error) {
		if req.Step == string(workflow.InstallNetwork) && !req.Verify {
			st := f.engineState(t)
			st.Nets[docker.NetworkName(generationtest.InstallationID)] = map[string]string{}
			if err := f.engine.Save(st); err != nil {
				t.Fatal(err)
			}
		}
		return f.child(ctx, req)
	}
}

// A refusal that comes after the command changed the host does not say
// "Nothing was changed.": it names what changed (the journal, the steps
// completed, among them the account and its group) and the next command;
// what it names is on the host, and the rerun it names continues.
func TestARefusalAfterAChangeSaysWhatChanged(t *testing.T) {
	f := newRunFixture(t)
	_, err := f.install(t, func(c *Command) { c.Child = f.foreignNetworkAtRun(t) })
	if err == nil {
		t.Fatal("the install went on past a network that is not the node's")
	}
	msg := err.Error()
	t.Logf("install: %s", msg)
	if strings.Contains(msg, "Nothing was changed") {
		t.Errorf("a refusal after the account was created says that nothing was changed: %s", msg)
	}
	for _, want := range []string{
		"is not labelled",            // the child's refusal, as it said it
		"Changed before the failure", // what changed instead
		JournalPath(f.host, generationtest.InstallationID),
		"account, group, host_records", // root's steps that changed the host
		"rerun the same command",       // the next command
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q: %s", want, msg)
		}
	}
	// What it names is so.
	if _, err := accounts.Under(f.host.Root).LookupUser(layout.Account); err != nil {
		t.Errorf("the account the failure names: %v", err)
	}
	if _, err := os.Lstat(f.host.Record(generationtest.InstallationID)); err != nil {
		t.Errorf("the host record the failure names: %v", err)
	}
	if _, err := os.Lstat(JournalPath(f.host, generationtest.InstallationID)); err != nil {
		t.Errorf("the journal the failure names: %v", err)
	}
	// The rerun it names continues once the network is gone.
	st := f.engineState(t)
	delete(st.Nets, docker.NetworkName(generationtest.InstallationID))
	if err := f.engine.Save(st); err != nil {
		t.Fatal(err)
	}
	f.installed(t)
}

// The rerun of a registered node that adds the account to its group again
// and rewrites the host record before a service-account step refuses says
// what it changed, never "Nothing was changed.".
func TestARegisteredRerunRefusedAfterItsChangesSaysSo(t *testing.T) {
	f := newRunFixture(t)
	f.installed(t)
	if err := f.accts.RemoveFromGroup(context.Background(), "docker"); err != nil {
		t.Fatal(err)
	}
	editRecord(t, f, func(m map[string]any) { m["note"] = "edited by hand" })
	_, err := f.install(t, func(c *Command) { c.Child = f.foreignNetworkAtRun(t) })
	if err == nil {
		t.Fatal("the rerun went on past a network that is not the node's")
	}
	msg := err.Error()
	t.Logf("rerun: %s", msg)
	if strings.Contains(msg, "Nothing was changed") {
		t.Errorf("a refusal after the group and the host record changed says that nothing was changed: %s", msg)
	}
	for _, want := range []string{"is not labelled", "Changed before the failure", "group, host_records", "kept aside"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q: %s", want, msg)
		}
	}
	names, err := accounts.Under(f.host.Root).GroupNames(layout.Account)
	if err != nil || !strings.Contains(strings.Join(names, " "), "docker") {
		t.Errorf("the group the failure names: %v %v", names, err)
	}
	if data, _ := os.ReadFile(f.host.Record(generationtest.InstallationID)); strings.Contains(string(data), "edited by hand") {
		t.Error("the host record the failure names was not rewritten")
	}
}
