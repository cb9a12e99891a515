package install

import (
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/accounts/accountstest"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/host/systemd/systemdtest"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// The run fixture for the tests of package install_test, which run the
// install command beside the uninstall command: package uninstall imports
// this one, so only an external test package can import both.

// RunFixture is a host root with a Core and console, fakes for the
// accounts and systemd, a file-backed Docker Engine and the real
// service-account child (newRunFixture).
type RunFixture = runFixture

// NewRunFixture returns a new RunFixture; it skips the test unless it runs
// as root.
func NewRunFixture(t *testing.T) *RunFixture { return newRunFixture(t) }

// Install runs the install command, edited by edit (nil: as it is).
func (f *runFixture) Install(t *testing.T, edit func(*Command)) (*workflow.Report, error) {
	return f.install(t, edit)
}

// Installed runs a first installation to completion; later commands get
// no token.
func (f *runFixture) Installed(t *testing.T) { f.installed(t) }

// HostPaths is the fixture's host root.
func (f *runFixture) HostPaths() layout.Host { return f.host }

// AccountsFake is the accounts adapter's fake.
func (f *runFixture) AccountsFake() *accountstest.Fake { return f.accts }

// SystemdFake is the systemd fake.
func (f *runFixture) SystemdFake() *systemdtest.Fake { return f.systemd }

// Engine is the Docker Engine the command and its child share.
func (f *runFixture) Engine() *dockertest.FileEngine { return f.engine }
