package uninstall

import (
	"github.com/openagentcore/oac-node-install/workflow"
)

// Steps binds every state of the uninstall workflow to its step.
func Steps(e *Env) map[string]workflow.Step {
	return map[string]workflow.Step{
		string(workflow.UninstallAskCore):           askCoreStep{e},
		string(workflow.UninstallStopUnit):          stopUnitStep{e},
		string(workflow.UninstallRemoveUnit):        removeUnitStep{e},
		string(workflow.UninstallNetwork):           childStep{Name: workflow.UninstallNetwork, Event: workflow.EventNetworkHandled, e: e},
		string(workflow.UninstallNodeState):         childStep{Name: workflow.UninstallNodeState, Event: workflow.EventStateRemoved, e: e},
		string(workflow.UninstallMicrosandboxStore): childStep{Name: workflow.UninstallMicrosandboxStore, Event: workflow.EventStoreHandled, e: e},
		string(workflow.UninstallAccount):           accountStep{e},
		string(workflow.UninstallBookkeeping):       recordsStep{e},
	}
}
