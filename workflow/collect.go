package workflow

// The collect workflow (service account, on a Core drop grant): native
// completion is persisted before release files are removed, and the dropped
// marker is written last.
const (
	CollectLock           State = "lock"
	CollectRecheck        State = "recheck"
	CollectCollecting     State = "collecting"
	CollectNative         State = "native"
	CollectNativeComplete State = "native_complete"
	CollectReleaseFiles   State = "release_files"
	CollectDropped        State = "dropped"
	CollectCollected      State = "collected"
)

// Collect events.
const (
	EventRechecked      Event = "rechecked"
	EventJournaled      Event = "journaled"
	EventNativeRemoved  Event = "native_removed"
	EventNativeRecorded Event = "native_recorded"
	EventFilesRemoved   Event = "files_removed"
	EventMarkedDropped  Event = "marked_dropped"
)

// CollectDefinition returns the collect workflow.
func CollectDefinition() *Definition {
	return &Definition{
		Name:  "collect",
		Final: CollectCollected,
		States: []StateDef{
			{Name: CollectLock, Policy: Rerun, Account: ServiceAccount, Doc: "installation lock and the generation's exclusive lease (non-blocking)",
				On: []Transition{{EventLeaseAcquired, CollectRecheck}}},
			{Name: CollectRecheck, Policy: Rerun, Account: ServiceAccount, Doc: "recheck every reference: records, retained configurations, shared paths",
				On: []Transition{{EventRechecked, CollectCollecting}}},
			{Name: CollectCollecting, Policy: Rerun, Account: ServiceAccount, Doc: "write <g>.collecting with native_complete false",
				On: []Transition{{EventJournaled, CollectNative}}},
			{Name: CollectNative, Policy: Verify, Account: ServiceAccount, Doc: "native removal (microsandbox private store after a complete inventory; Docker images never)",
				On: []Transition{{EventNativeRemoved, CollectNativeComplete}}},
			{Name: CollectNativeComplete, Policy: Rerun, Account: ServiceAccount, Doc: "persist native_complete true",
				On: []Transition{{EventNativeRecorded, CollectReleaseFiles}}},
			{Name: CollectReleaseFiles, Policy: Rerun, Account: ServiceAccount, Doc: "hash-check every remaining file, then remove unreferenced private release files",
				On: []Transition{{EventFilesRemoved, CollectDropped}}},
			{Name: CollectDropped, Policy: Rerun, Account: ServiceAccount, Doc: "write <g>.dropped",
				On: []Transition{{EventMarkedDropped, CollectCollected}}},
		},
	}
}
