package workflow

// The uninstall workflow (root): removes exactly what bookkeeping says the
// installer made. It never touches sandboxes, volumes or images.
const (
	UninstallAskCore           State = "ask_core"
	UninstallStopUnit          State = "stop_unit"
	UninstallRemoveUnit        State = "remove_unit"
	UninstallNetwork           State = "network"
	UninstallNodeState         State = "node_state"
	UninstallMicrosandboxStore State = "microsandbox_store"
	UninstallAccount           State = "account"
	UninstallBookkeeping       State = "bookkeeping"
	UninstallUninstalled       State = "uninstalled"
)

// Uninstall events.
const (
	EventCoreConfirmed    Event = "core_confirmed"
	EventCoreCheckSkipped Event = "core_check_skipped"
	EventUnitStopped      Event = "unit_stopped"
	EventUnitRemoved      Event = "unit_removed"
	EventNetworkHandled   Event = "network_handled"
	EventStateRemoved     Event = "state_removed"
	EventStoreHandled     Event = "store_handled"
	EventAccountHandled   Event = "account_handled"
	EventRecordsRemoved   Event = "records_removed"
)

// UninstallDefinition returns the uninstall workflow.
func UninstallDefinition() *Definition {
	return &Definition{
		Name:  "uninstall",
		Final: UninstallUninstalled,
		States: []StateDef{
			{Name: UninstallAskCore, Policy: Rerun, Account: ServiceAccount, Doc: "ask Core whether it still lists the node (401 = removed); --force or never registered skips",
				On: []Transition{{EventCoreConfirmed, UninstallStopUnit}, {EventCoreCheckSkipped, UninstallStopUnit}}},
			{Name: UninstallStopUnit, Policy: Rerun, Doc: "stop and disable the unit",
				On: []Transition{{EventUnitStopped, UninstallRemoveUnit}}},
			{Name: UninstallRemoveUnit, Policy: Rerun, Doc: "remove the unit and env file, reload systemd",
				On: []Transition{{EventUnitRemoved, UninstallNetwork}}},
			{Name: UninstallNetwork, Policy: Rerun, Account: ServiceAccount, Doc: "service account: remove the Docker network unless labelled containers remain",
				On: []Transition{{EventNetworkHandled, UninstallNodeState}}},
			{Name: UninstallNodeState, Policy: Rerun, Account: ServiceAccount, Doc: "service account: remove the node root",
				On: []Transition{{EventStateRemoved, UninstallMicrosandboxStore}}},
			{Name: UninstallMicrosandboxStore, Policy: Rerun, Account: ServiceAccount, Doc: "remove the microsandbox store only after Core confirmed the removal",
				On: []Transition{{EventStoreHandled, UninstallAccount}}},
			{Name: UninstallAccount, Policy: Verify, Doc: "remove groups added, and the account if the installer created it and no node remains",
				On: []Transition{{EventAccountHandled, UninstallBookkeeping}}},
			{Name: UninstallBookkeeping, Policy: Rerun, Doc: "remove the host records and the installation's bookkeeping",
				On: []Transition{{EventRecordsRemoved, UninstallUninstalled}}},
		},
	}
}

// FactAccountKept is the fact the uninstallation's account step records
// when it keeps the service account for a rerun: "process" (a process
// still ran as it) or "store" (a microsandbox store was kept).
const FactAccountKept = "account_kept"

// AccountKept is why the uninstallation whose journal r reads kept the
// service account for a rerun ("process" or "store"), or "": its journal
// ended, but the account, its home, installer.db and /etc/oac-node remain
// until the rerun (CONTRACT §10, Uninstall), so the run is Incomplete.
func (r *Report) AccountKept() string {
	if r == nil || r.Workflow != UninstallDefinition().Name || (r.Condition != Complete && r.Condition != Incomplete) {
		return ""
	}
	return r.Facts[FactAccountKept]
}

// FactNetworkLeft is the fact the uninstallation's network step records
// when it left the node's Docker network because the Docker Engine did not
// run (stopped or removed): the network's name.
const FactNetworkLeft = "network_left"

// NetworkLeft is the Docker network the uninstallation whose journal r
// reads left because the Docker Engine did not run, or "": the rest is
// removed, and `sudo docker network rm <name>` removes it once the engine
// runs, so the run is Incomplete.
func (r *Report) NetworkLeft() string {
	if r == nil || r.Workflow != UninstallDefinition().Name || (r.Condition != Complete && r.Condition != Incomplete) {
		return ""
	}
	return r.Facts[FactNetworkLeft]
}
