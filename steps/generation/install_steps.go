package generation

import (
	"github.com/openagentcore/oac-node-install/workflow"
)

// Facts the installation's service-account steps record.
const (
	factSourceCommit = "source_commit" // the selected Runtime release
	factNodeRelease  = "node_release"  // the console release of the node program
	factWarm         = "warm_image"    // "true": the image was already held; no archive was fetched
	factNetwork      = "network"
)

// InstallSteps binds the install workflow's service-account states to e.
// Root runs each of them in its own privilege-separated child
// (RunInstallStep); the others are root's.
func InstallSteps(e *InstallEnv) map[string]workflow.Step {
	return map[string]workflow.Step{
		string(workflow.InstallNodeRoot):       nodeRootStep{e},
		string(workflow.InstallMetadata):       metadataStep{e},
		string(workflow.InstallDownloads):      installDownloadStep{e},
		string(workflow.InstallHelper):         helperStep{e},
		string(workflow.InstallLease):          installLeaseStep{e},
		string(workflow.InstallRuntime):        runtimeStep{e},
		string(workflow.InstallNetwork):        networkStep{e},
		string(workflow.InstallProviderConfig): providerConfigStep{e},
		string(workflow.InstallRegister):       registerStep{e},
		string(workflow.InstallWaitReady):      waitReadyStep{e},
	}
}
