package install

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/workflow"
)

// The installation's environment checks the operator's CA and the proxy
// settings when it is made, but builds the system roots and the console
// client only when a step first connects: the node root step does not, the
// metadata step does (and its TLS connection to the test console, whose CA
// is the operator's, works).
func TestNodeEnvBuildsRootsOnFirstUse(t *testing.T) {
	f := newInstallFixture(t)
	ctx := context.Background()
	if err := EnsureNodeRoot(f.home, nodeTestID, os.Getuid()); err != nil {
		t.Fatal(err)
	}
	bad := f.options()
	bad.CoreCA = []byte("not a certificate")
	if _, err := NewNodeEnv(ctx, bad); !errors.Is(err, errCoreCA) {
		t.Fatalf("a CA file without a certificate: %v", err)
	}
	bad = f.options()
	bad.Download.Proxy = proxy.FromEnviron([]string{"https_proxy=ftp://proxy.example:21"})
	if _, err := NewNodeEnv(ctx, bad); err == nil {
		t.Fatal("a proxy URL of another scheme was accepted")
	}

	e, err := NewNodeEnv(ctx, f.options())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if roots, console := e.Built(); roots || console {
		t.Fatal("the roots or the console client were built with the environment")
	}
	steps := nodeSteps(e)
	if _, err := steps[workflow.InstallNodeRoot].Run(ctx, workflow.Facts{}); err != nil {
		t.Fatal(err)
	}
	if roots, console := e.Built(); roots || console {
		t.Fatal("the node root step, which connects nowhere, built the roots or the console client")
	}
	if _, err := steps[workflow.InstallMetadata].Run(ctx, workflow.Facts{}); err != nil {
		t.Fatal(err)
	}
	if roots, console := e.Built(); !roots || !console {
		t.Fatal("the metadata step fetched without the roots and the console client of the environment")
	}
}
