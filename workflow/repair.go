package workflow

// The repair workflow (service account): restores missing immutable files of
// a prepared generation at their original paths. Readiness comes only from
// the provider probe.
const (
	RepairLock     State = "lock"
	RepairVerify   State = "verify"
	RepairDownload State = "download"
	RepairProbe    State = "probe"
	RepairRepaired State = "repaired"
)

// Repair events.
const (
	EventVerified Event = "verified"
	EventRestored Event = "restored"
	EventProbed   Event = "probed"
)

// RepairDefinition returns the repair workflow.
func RepairDefinition() *Definition {
	return &Definition{
		Name:  "repair",
		Final: RepairRepaired,
		States: []StateDef{
			{Name: RepairLock, Policy: Rerun, Account: ServiceAccount, Doc: "installation lock and the generation's exclusive lease (non-blocking)",
				On: []Transition{{EventLeaseAcquired, RepairVerify}}},
			{Name: RepairVerify, Policy: Rerun, Account: ServiceAccount, Doc: "verify the selected release and every existing sibling checksum",
				On: []Transition{{EventVerified, RepairDownload}}},
			{Name: RepairDownload, Policy: Rerun, Account: ServiceAccount, Doc: "download only missing immutable files at their original paths",
				On: []Transition{{EventRestored, RepairProbe}}},
			{Name: RepairProbe, Policy: Rerun, Account: ServiceAccount, Doc: "run the provider readiness probe",
				On: []Transition{{EventProbed, RepairRepaired}}},
		},
	}
}
