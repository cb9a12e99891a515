package workflow

// The prepare workflow (service account, run by oac-node as the retained
// generation helper): plan before downloads, import_started before the
// importer runs, the final configuration durable before the plan is cleared.
const (
	PrepareLock        State = "lock"
	PrepareLease       State = "lease"
	PreparePlan        State = "plan"
	PrepareDownload    State = "download"
	PrepareImportStart State = "import_start"
	PrepareImport      State = "import"
	PreparePublish     State = "publish"
	PrepareClearPlan   State = "clear_plan"
	PreparePrepared    State = "prepared"
)

// Prepare events.
const (
	EventPlanned       Event = "planned"
	EventFilesReady    Event = "files_ready"
	EventImportMarked  Event = "import_marked"
	EventImported      Event = "imported"
	EventPublished     Event = "published"
	EventPlanCleared   Event = "plan_cleared"
	EventLeaseAcquired Event = "lease_acquired"
)

// PrepareDefinition returns the prepare workflow.
func PrepareDefinition() *Definition {
	return &Definition{
		Name:  "prepare",
		Final: PreparePrepared,
		States: []StateDef{
			{Name: PrepareLock, Policy: Rerun, Account: ServiceAccount, Doc: "installation lock and, when it exists, the generation's exclusive lease",
				On: []Transition{{EventLocked, PrepareLease}}},
			{Name: PrepareLease, Policy: Inspect, Account: ServiceAccount, Doc: "a new generation's lease and durable identity (an interrupted initialization needs inspection)",
				On: []Transition{{EventLeaseAcquired, PreparePlan}}},
			{Name: PreparePlan, Policy: Rerun, Account: ServiceAccount, Doc: "write <g>.preparing with import_started false (or revalidate the same plan)",
				On: []Transition{{EventPlanned, PrepareDownload}}},
			{Name: PrepareDownload, Policy: Rerun, Account: ServiceAccount, Doc: "verified downloads of the selected release's missing immutable files",
				On: []Transition{{EventFilesReady, PrepareImportStart}}},
			{Name: PrepareImportStart, Policy: Rerun, Account: ServiceAccount, Doc: "rewrite the plan with import_started true",
				On: []Transition{{EventImportMarked, PrepareImport}}},
			{Name: PrepareImport, Policy: Verify, Account: ServiceAccount, Doc: "import the Runtime and resolve its identity",
				On: []Transition{{EventImported, PreparePublish}}},
			{Name: PreparePublish, Policy: Rerun, Account: ServiceAccount, Doc: "publish the final <g>.json (write-once, durable)",
				On: []Transition{{EventPublished, PrepareClearPlan}}},
			{Name: PrepareClearPlan, Policy: Rerun, Account: ServiceAccount, Doc: "remove <g>.preparing and fsync the directory",
				On: []Transition{{EventPlanCleared, PreparePrepared}}},
		},
	}
}
