package uninstall

import (
	"github.com/openagentcore/oac-node-install/workflow"
)

// Steps binds every state of the uninstall workflow to its step.
func Steps(e *Env) map[workflow.State]workflow.Step {
	return map[workflow.State]workflow.Step{
		workflow.UninstallAskCore:           askCoreStep{e},
		workflow.UninstallStopUnit:          stopUnitStep{e},
		workflow.UninstallRemoveUnit:        removeUnitStep{e},
		workflow.UninstallNetwork:           childStep{Name: workflow.UninstallNetwork, Event: workflow.EventNetworkHandled, e: e},
		workflow.UninstallNodeState:         childStep{Name: workflow.UninstallNodeState, Event: workflow.EventStateRemoved, e: e},
		workflow.UninstallMicrosandboxStore: childStep{Name: workflow.UninstallMicrosandboxStore, Event: workflow.EventStoreHandled, e: e},
		workflow.UninstallAccount:           accountStep{e},
		workflow.UninstallBookkeeping:       recordsStep{e},
	}
}
