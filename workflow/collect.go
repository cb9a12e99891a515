package workflow

// The collect workflow (service account, on a Core drop grant): native
// completion is persisted before release files are removed, and the dropped
// marker is written last.
const (
	CollectLock     State = "lock"
	CollectRecheck  State = "recheck"
	CollectJournal  State = "collecting"
	CollectNative   State = "native"
	CollectNativeOK State = "native_complete"
	CollectFiles    State = "release_files"
	CollectDropped  State = "dropped"
	CollectDone     State = "collected"
)

// Collect events.
const (
	EventRechecked      Event = "rechecked"
	EventJournaled      Event = "journaled"
	EventNativeRemoved  Event = "native_removed"
	EventNativeRecorded Event = "native_recorded"
	EventFilesRemoved   Event = "files_removed"
	EventDropped        Event = "marked_dropped"
)

// CollectDefinition returns the collect workflow.
func CollectDefinition() *Definition {
	return &Definition{
		Name:  "collect",
		Final: CollectDone,
		States: []StateDef{
			{Name: CollectLock, Step: "lock", Policy: Rerun, Doc: "installation lock and the generation's exclusive lease (non-blocking)",
				On: []Transition{{EventLeaseAcquired, CollectRecheck}}},
			{Name: CollectRecheck, Step: "recheck", Policy: Rerun, Doc: "recheck every reference: records, retained configurations, shared paths",
				On: []Transition{{EventRechecked, CollectJournal}}},
			{Name: CollectJournal, Step: "collecting", Policy: Rerun, Doc: "write <g>.collecting with native_complete false",
				On: []Transition{{EventJournaled, CollectNative}}},
			{Name: CollectNative, Step: "native", Policy: Verify, Doc: "native removal (microsandbox private store after a complete inventory; Docker images never)",
				On: []Transition{{EventNativeRemoved, CollectNativeOK}}},
			{Name: CollectNativeOK, Step: "native-complete", Policy: Rerun, Doc: "persist native_complete true",
				On: []Transition{{EventNativeRecorded, CollectFiles}}},
			{Name: CollectFiles, Step: "release-files", Policy: Rerun, Doc: "hash-check every remaining file, then remove unreferenced private release files",
				On: []Transition{{EventFilesRemoved, CollectDropped}}},
			{Name: CollectDropped, Step: "dropped", Policy: Rerun, Doc: "write <g>.dropped",
				On: []Transition{{EventDropped, CollectDone}}},
		},
	}
}
