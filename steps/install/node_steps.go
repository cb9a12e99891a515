package install

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

// nodeSteps binds the install workflow's service-account states to e.
// Root runs them in one privilege-separated child for the run
// (install.Children, which calls RunStep there); the other states
// are root's.
func nodeSteps(e *NodeEnv) map[workflow.State]workflow.Step {
	return map[workflow.State]workflow.Step{
		workflow.InstallNodeRoot:       nodeRootStep{e},
		workflow.InstallMetadata:       metadataStep{e},
		workflow.InstallDownloads:      downloadsStep{e},
		workflow.InstallHelper:         helperStep{e},
		workflow.InstallLease:          leaseStep{e},
		workflow.InstallRuntime:        runtimeStep{e},
		workflow.InstallNetwork:        networkStep{e},
		workflow.InstallProviderConfig: providerConfigStep{e},
		workflow.InstallRegister:       registerStep{e},
		workflow.InstallWaitReady:      waitReadyStep{e},
	}
}
