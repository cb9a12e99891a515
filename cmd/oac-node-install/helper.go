package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"

	"github.com/openagentcore/oac-node-install/steps/generation"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/workflow"
)

// helperTransferLine is the fixed line the generation helper ends with when
// it exits 65; the node program maps the status, never the text, to
// runtime_download_failed.
const helperTransferLine = "the Runtime artifacts could not be downloaded or verified (runtime_download_failed)"

// helperExit is a generation helper failure that picks its exit status.
type helperExit struct {
	code int
	msg  string
}

func (e *helperExit) Error() string { return e.msg }
func (e *helperExit) ExitCode() int { return e.code }

// runGenerationHelper runs the retained helper's action (prepare, repair or
// collect) for one generation, as the node account: oac-node runs
// `python3 <node root>/generation-preparer.pyz ARGS`, which executes the
// retained <node root>/generation-preparer (this binary) with ARGS:
// `--installation-id ID --generation-action A --generation N
// --specification-digest HEX [--allow-insecure-origin]`. The node root is
// ~/.oac/nodes/<id> of the account running it (HOME, else the account
// database), or below --host-root in test builds. It exits 65 only for
// artifact transfer, checksum or provenance failures, decided by the error's
// type, and 1 for anything else. The wiring — which definition, which steps,
// which journal — is generation.Run's, for the three actions.
func runGenerationHelper(ctx context.Context, c *cli, f *installerFlags) error {
	stdout, stderr := c.stdout, c.stderr
	if os.Geteuid() == 0 || os.Getuid() == 0 {
		return workflow.Refuse(errors.New("the generation helper runs as the node account, never as root; the node program runs it"))
	}
	home, err := helperHome(c)
	if err != nil {
		return err
	}
	e, err := noderoot.NewEnv(noderoot.Options{
		Action: f.generationAction,
		Identity: lease.Identity{
			InstallationID:      f.installationID,
			Generation:          f.generation,
			SpecificationDigest: f.specificationDigest,
		},
		Home: home,
		UID:  os.Getuid(),
		Docker: func(_ context.Context, host string) (noderoot.Docker, error) {
			return docker.New(host)
		},
		Log: stdout,
	})
	if err != nil {
		return err
	}
	defer e.Close()
	if _, err := generation.Run(ctx, e); err != nil {
		if noderoot.IsArtifactFailure(err) {
			fmt.Fprintf(stderr, "generation helper: %v\n", err)
			return &helperExit{code: exitTransfer, msg: helperTransferLine}
		}
		return err
	}
	fmt.Fprintf(stdout, "%s of generation %d complete\n", f.generationAction, f.generation)
	return nil
}

// helperHome is the node account's home: below --host-root when given
// (test builds), else $HOME, else the account database's.
func helperHome(c *cli) (string, error) {
	if c.hostRoot != "" {
		return c.host().Home(), nil
	}
	if h := os.Getenv("HOME"); h != "" {
		return h, nil
	}
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		return "", workflow.Refuse(errors.New("the node account's home is unknown: HOME is not set and the account database has none"))
	}
	return u.HomeDir, nil
}
