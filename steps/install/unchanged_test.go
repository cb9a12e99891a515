package install

import (
	"errors"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/workflow"
)

// The same foreign network as in TestARefusalAfterAChangeSaysWhatChanged,
// there before the command: the service-account child's check refuses it
// before the first change. The refusal is a workflow.Refusal that changed
// nothing, its text is the child's, and the command prints it ending with
// "Nothing was changed."; the host is as it was (refusesUnchanged).
func TestAChildsRefusalBeforeAnyChangeSaysNothingWasChanged(t *testing.T) {
	f := newRunFixture(t)
	f.installed(t)
	st := f.engineState(t)
	st.Nets[docker.NetworkName(generationtest.InstallationID)] = map[string]string{}
	if err := f.engine.Save(st); err != nil {
		t.Fatal(err)
	}
	err := f.refusesUnchanged(t, nil, "is not labelled", "remove it first")
	var ref *workflow.Refusal
	if !errors.As(err, &ref) || !workflow.NothingChanged(err) {
		t.Errorf("%T: want a workflow.Refusal that changed nothing", err)
	}
	if strings.Contains(err.Error(), "Nothing was changed") {
		t.Errorf("the refusal's own text says that nothing was changed (the command says it once): %v", err)
	}
	if got, want := workflow.Message(err), err.Error()+". Nothing was changed."; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}
