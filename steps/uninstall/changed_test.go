package uninstall

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// A step that refuses after the uninstallation stopped and removed the
// unit does not say "Nothing was changed.": it names what changed (the
// journals, the steps completed) and the next command; what it names is
// so, and the rerun it names finishes the uninstallation.
func TestAnUninstallRefusalAfterTheUnitStoppedSaysWhatChanged(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	c := f.command(false)
	child := c.Child
	c.Child = func(ctx context.Context, req asaccount.Request) (asaccount.Answer, error) {
		if req.Step == string(workflow.UninstallNodeState) {
			// The child's refusal, as one run in process returns it.
			return asaccount.Answer{}, &workflow.Refusal{
				Err: errors.New("the node root is not as the installer left it"), Hint: "Inspect it"}
		}
		return child(ctx, req)
	}
	_, err := Run(context.Background(), c)
	if err == nil {
		t.Fatal("the uninstallation went on past the refusal")
	}
	msg := err.Error()
	t.Logf("uninstall: %s", msg)
	if strings.Contains(msg, "Nothing was changed") {
		t.Errorf("a refusal after the unit was stopped and removed says that nothing was changed: %s", msg)
	}
	for _, want := range []string{
		"not as the installer left it. Inspect it", // the refusal, as it said it
		"Changed before the failure",
		JournalPath(f.host, id),
		"stop_unit, remove_unit, network", // the steps that changed the host
		"rerun the same command",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure does not say %q: %s", want, msg)
		}
	}
	if f.systemd.Enabled(layout.UnitName(id)) {
		t.Error("the unit the failure names as stopped is enabled")
	}
	if _, err := os.Lstat(f.host.Unit(id)); err == nil {
		t.Error("the unit file the failure names as removed is there")
	}
	rep, err := f.uninstall(t, false)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("the rerun: %v", err)
	}
}
