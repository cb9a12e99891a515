package uninstall

import (
	"context"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Every state the uninstall definition gives the service account has
// nothing to do without the account, and an answer without a child for a
// run whose account is not the node's (noChild): an event of the state.
func TestEveryServiceAccountStepHasAnEventWithoutTheAccount(t *testing.T) {
	def := workflow.UninstallDefinition()
	for _, st := range def.AccountStates(workflow.ServiceAccount) {
		ev, ok := ifNoAccount[st]
		sd, _ := def.State(st)
		if !ok || !hasEvent(sd, ev) {
			t.Errorf("%s: event without the account %q, not one of the state's", st, ev)
		}
		a, err := noChild(context.Background(), asaccount.Request{Workflow: def.Name, Step: string(st)})
		if err != nil || a.Event != ev {
			t.Errorf("%s: without a child: %+v %v", st, a, err)
		}
	}
	if len(ifNoAccount) != len(def.AccountStates(workflow.ServiceAccount)) {
		t.Errorf("events without the account for %d states, the definition gives the account %d", len(ifNoAccount), len(def.AccountStates(workflow.ServiceAccount)))
	}
}

func hasEvent(sd workflow.StateDef, ev workflow.Event) bool {
	for _, tr := range sd.On {
		if tr.Event == ev {
			return true
		}
	}
	return false
}
