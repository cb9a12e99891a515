package workflow

// The install workflow (root, with service-account steps run in a
// privilege-separated child). A rerun of a registered node changes nothing
// that matches and needs no token.
const (
	InstallPreflight         State = "preflight"
	InstallReadToken         State = "read_token"
	InstallReadConfiguration State = "read_configuration"
	InstallHostLock          State = "host_lock"
	InstallAccount           State = "account"
	InstallGroup             State = "group"
	InstallHostRecords       State = "host_records"
	InstallNodeRoot          State = "node_root"
	InstallMetadata          State = "metadata"
	InstallDownloads         State = "downloads"
	InstallHelper            State = "helper"
	InstallLease             State = "lease"
	InstallRuntime           State = "runtime"
	InstallNetwork           State = "network"
	InstallProviderConfig    State = "provider_config"
	InstallRegister          State = "register"
	InstallEnvFile           State = "env_file"
	InstallUnit              State = "unit"
	InstallStart             State = "start"
	InstallWaitReady         State = "wait_ready"
	InstallSummary           State = "summary"
	InstallInstalled         State = "installed"
)

// Install events.
const (
	EventChecked          Event = "checked"
	EventTokenRead        Event = "token_read"
	EventTokenNotNeeded   Event = "token_not_needed"
	EventConfigured       Event = "configured"
	EventLocked           Event = "locked"
	EventAccountReady     Event = "account_ready"
	EventGroupReady       Event = "group_ready"
	EventRecorded         Event = "recorded"
	EventRootReady        Event = "root_ready"
	EventMetadataVerified Event = "metadata_verified"
	EventDownloaded       Event = "downloaded"
	EventHelperWritten    Event = "helper_written"
	EventLeaseReady       Event = "lease_ready"
	EventRuntimeReady     Event = "runtime_ready"
	EventNetworkReady     Event = "network_ready"
	EventNetworkNotNeeded Event = "network_not_needed"
	EventProviderWritten  Event = "provider_written"
	EventRegistered       Event = "registered"
	EventEnvWritten       Event = "env_written"
	EventUnitWritten      Event = "unit_written"
	EventStarted          Event = "started"
	EventReady            Event = "ready"
	EventSummarized       Event = "summarized"
)

// InstallDefinition returns the install workflow.
func InstallDefinition() *Definition {
	return &Definition{
		Name:  "install",
		Final: InstallInstalled,
		States: []StateDef{
			{Name: InstallPreflight, Policy: Rerun, Doc: "read-only host checks: root, linux/amd64, systemd, SELinux, provider, capacity, one Core per host",
				On: []Transition{{EventChecked, InstallReadToken}}},
			{Name: InstallReadToken, Policy: Rerun, Doc: "read the enrollment token from standard input (a registered node needs none)",
				On: []Transition{{EventTokenRead, InstallReadConfiguration}, {EventTokenNotNeeded, InstallReadConfiguration}}},
			{Name: InstallReadConfiguration, Policy: Rerun, Doc: "read and validate Core's node configuration",
				On: []Transition{{EventConfigured, InstallHostLock}}},
			{Name: InstallHostLock, Policy: Rerun, Doc: "take /run/oac-node.lock and re-check the host records",
				On: []Transition{{EventLocked, InstallAccount}}},
			{Name: InstallAccount, Policy: Verify, Doc: "create or adopt the oac-node account",
				On: []Transition{{EventAccountReady, InstallGroup}}},
			{Name: InstallGroup, Policy: Verify, Doc: "add oac-node to the docker or kvm group",
				On: []Transition{{EventGroupReady, InstallHostRecords}}},
			{Name: InstallHostRecords, Policy: Rerun, Doc: "write /run/oac-node-docker and /etc/oac-node/<id>.json",
				On: []Transition{{EventRecorded, InstallNodeRoot}}},
			{Name: InstallNodeRoot, Policy: Rerun, Account: ServiceAccount, Doc: "service account: create the node root",
				On: []Transition{{EventRootReady, InstallMetadata}}},
			{Name: InstallMetadata, Policy: Rerun, Account: ServiceAccount, Doc: "service account: fetch and verify release metadata, write installation.json",
				On: []Transition{{EventMetadataVerified, InstallDownloads}}},
			{Name: InstallDownloads, Policy: Rerun, Account: ServiceAccount, Doc: "service account: verified downloads of the node program and Runtime files",
				On: []Transition{{EventDownloaded, InstallHelper}}},
			{Name: InstallHelper, Policy: Rerun, Account: ServiceAccount, Doc: "service account: write the retained generation helper and its launcher generation-preparer.pyz",
				On: []Transition{{EventHelperWritten, InstallLease}}},
			{Name: InstallLease, Policy: Verify, Account: ServiceAccount, Doc: "service account: create the enrolled generation's lease and its durable identity",
				On: []Transition{{EventLeaseReady, InstallRuntime}}},
			{Name: InstallRuntime, Policy: Verify, Account: ServiceAccount, Doc: "service account: import the Runtime and verify its image identity",
				On: []Transition{{EventRuntimeReady, InstallNetwork}}},
			{Name: InstallNetwork, Policy: Verify, Account: ServiceAccount, Doc: "service account: create the Docker network oac-node-<id>",
				On: []Transition{{EventNetworkReady, InstallProviderConfig}, {EventNetworkNotNeeded, InstallProviderConfig}}},
			{Name: InstallProviderConfig, Policy: Rerun, Account: ServiceAccount, Doc: "service account: publish provider.json (write-once)",
				On: []Transition{{EventProviderWritten, InstallRegister}}},
			{Name: InstallRegister, Policy: Verify, Account: ServiceAccount, Doc: "service account: register with Core (token file always removed), write registered.json",
				On: []Transition{{EventRegistered, InstallEnvFile}}},
			{Name: InstallEnvFile, Policy: Rerun, Doc: "write or remove /etc/oac-node/<id>.env (proxy settings)",
				On: []Transition{{EventEnvWritten, InstallUnit}}},
			{Name: InstallUnit, Policy: Rerun, Doc: "write the systemd unit and reload",
				On: []Transition{{EventUnitWritten, InstallStart}}},
			{Name: InstallStart, Policy: Rerun, Doc: "enable and start the unit, check it is active",
				On: []Transition{{EventStarted, InstallWaitReady}}},
			{Name: InstallWaitReady, Policy: Rerun, Account: ServiceAccount, Doc: "service account: wait until Core reports the node connected and ready",
				On: []Transition{{EventReady, InstallSummary}}},
			{Name: InstallSummary, Policy: Rerun, Doc: "print the summary",
				On: []Transition{{EventSummarized, InstallInstalled}}},
		},
	}
}
