package uninstall

import (
	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Steps binds every state of the uninstall workflow to its step: root's
// steps to e, and each state the definition marks workflow.ServiceAccount
// to an asaccount.Step (serviceStep), which runs steps/generation's
// uninstall step in the child; the Core check first answers from the check
// Run made before the journal (askCoreStep).
func Steps(e *Env) map[workflow.State]workflow.Step {
	out := map[workflow.State]workflow.Step{}
	for _, st := range workflow.UninstallDefinition().AccountStates(workflow.ServiceAccount) {
		out[st] = e.serviceStep(st)
	}
	out[workflow.UninstallAskCore] = askCoreStep{e}
	out[workflow.UninstallStopUnit] = stopUnitStep{e}
	out[workflow.UninstallRemoveUnit] = removeUnitStep{e}
	out[workflow.UninstallAccount] = accountStep{e}
	out[workflow.UninstallBookkeeping] = recordsStep{e}
	return out
}

// ifNoAccount is the event of each service-account step when the service
// account does not exist: nothing of the node can then be the account's,
// so the step has nothing to do (and the Core check is skipped).
var ifNoAccount = map[workflow.State]workflow.Event{
	workflow.UninstallAskCore:           workflow.EventCoreCheckSkipped,
	workflow.UninstallNetwork:           workflow.EventNetworkHandled,
	workflow.UninstallNodeState:         workflow.EventStateRemoved,
	workflow.UninstallMicrosandboxStore: workflow.EventStoreHandled,
}

// serviceStep runs the step of the service-account state st in the child.
func (e *Env) serviceStep(st workflow.State) asaccount.Step {
	return asaccount.Step{Workflow: workflow.UninstallDefinition().Name, State: st, D: e,
		IfNoAccount: ifNoAccount[st], Accounts: e.DBs}
}
