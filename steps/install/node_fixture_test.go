package install

import (
	"testing"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
)

// The fixture of the service-account steps' tests: the node root
// generationtest builds, of its own installation.
const (
	nodeTestID     = generationtest.InstallationID
	testCredential = generationtest.Credential
	commitA        = generationtest.CommitA
)

type fixtureRelease = generationtest.Release

func buildRelease(t testing.TB, commit string) *fixtureRelease {
	return generationtest.BuildRelease(t, commit)
}

func newTestServer(t testing.TB, releases ...*fixtureRelease) *generationtest.Server {
	return generationtest.NewServer(t, releases...)
}

func mkdir(t testing.TB, p string) { generationtest.Mkdir(t, p) }
