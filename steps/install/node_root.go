package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// nodeRootStep makes the node root's directories (RunStep creates
// them before the environment opens the root), keeps the private copy of
// the operator's Core CA, and removes every enrollment token file an
// earlier run left. A registered node's CA copy is never replaced: a
// different CA refuses.
type nodeRootStep struct{ e *NodeEnv }

func (s nodeRootStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	e := s.e
	if err := removeTokenFiles(e); err != nil {
		return workflow.Result{}, err
	}
	ca := e.in.CoreCA
	if len(ca) == 0 {
		return workflow.Result{}, nil
	}
	registered, err := e.Registered()
	if err != nil {
		return workflow.Result{}, err
	}
	if registered {
		if err := e.Root().PublishOnce(layout.CoreCAFile, ca, 0o600); err != nil {
			if errors.Is(err, safefile.ErrConflict) {
				return workflow.Result{}, noderoot.Refusal("This node was registered with a different Core CA; use the CA it was installed with, or remove the node and add it again", fmt.Errorf("different Core CA: %w", err))
			}
			return workflow.Result{}, err
		}
		return workflow.Result{}, nil
	}
	return workflow.Result{Facts: map[string]string{"core_ca_sha256": release.SHA256Hex(ca)}}, e.Root().AtomicWrite(layout.CoreCAFile, ca, 0o600)
}

// tokenFilePrefix names the private temporary files that hold the
// enrollment token while the node program registers.
const tokenFilePrefix = ".enrollment-"

// removeTokenFiles removes every enrollment token file in the node root
// (only regular files; anything else there is refused).
func removeTokenFiles(e *NodeEnv) error {
	names, err := e.Root().ReadDir()
	if err != nil {
		return err
	}
	for _, n := range names {
		if !strings.HasPrefix(n, tokenFilePrefix) {
			continue
		}
		if err := e.Root().Remove(n); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove the leftover token file %s: %w", n, err)
		}
	}
	return nil
}

// Check: every directory of the node root is there (0700, the account's),
// no enrollment token file is left, and the Core CA copy is the command's
// (a registered node's different copy refuses).
func (s nodeRootStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	h, err := safefile.OpenRoot(e.in.Home)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	defer h.Close()
	for _, rel := range nodeRootDirs(e.in.InstallationID) {
		d, err := h.OpenDir(rel, safefile.Expect{UID: e.in.UID, Mode: 0o700})
		if errors.Is(err, os.ErrNotExist) {
			return notDone, workflow.Result{}, nil
		}
		if err != nil {
			return 0, workflow.Result{}, err
		}
		d.Close()
	}
	names, err := e.Root().ReadDir()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	for _, n := range names {
		if strings.HasPrefix(n, tokenFilePrefix) {
			return notDone, workflow.Result{}, nil
		}
	}
	ca := e.in.CoreCA
	if len(ca) == 0 {
		return done, workflow.Result{}, nil
	}
	registered, err := e.Registered()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	old, err := e.ReadPrivate(layout.CoreCAFile, 1<<20)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return notDone, workflow.Result{}, nil
	case err != nil:
		return 0, workflow.Result{}, err
	case !bytes.Equal(old, ca) && registered:
		return 0, workflow.Result{}, noderoot.Refusal("This node was registered with a different Core CA; use the CA it was installed with, or remove the node and add it again", fmt.Errorf("different Core CA: %w", safefile.ErrConflict))
	case !bytes.Equal(old, ca):
		return notDone, workflow.Result{}, nil
	case registered:
		return done, workflow.Result{}, nil
	}
	return done, workflow.Result{Facts: map[string]string{"core_ca_sha256": release.SHA256Hex(ca)}}, nil
}
