package install

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// runtimeStep makes the provider hold the Runtime image of the enrolled
// generation with its exact identity: an image already held (under either
// identity, linux/amd64) is kept; otherwise the image is imported from
// the archive, its bytes and identity proven in the same read
// (noderoot.ImportImage: the Docker Engine loads the gunzipped stream,
// whose end it gets only once the proof holds; microsandbox loads an
// unpacked copy, which is removed afterwards, as is one an earlier version
// left). The downloaded archive stays for repair. Before registration an
// archive whose bytes are not the release's is downloaded again.
type runtimeStep struct{ e *NodeEnv }

const factImageID = "image"

func (s runtimeStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	id, err := noderoot.ImportImage(ctx, s.e, s.e.base, ".")
	if errors.Is(err, noderoot.ErrConflict) {
		// Before registration a cached archive that differs from the
		// release's is disposable (CONTRACT §10): it is downloaded again
		// and loaded once more. After, the refusal stands.
		registered, rerr := s.e.Registered()
		if rerr != nil {
			return workflow.Result{}, errors.Join(err, rerr)
		}
		if !registered {
			s.e.Logf("replace %s: its bytes are not the release's", release.PathRuntimeImage)
			if rerr := s.e.Root().Remove(release.PathRuntimeImage); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				return workflow.Result{}, errors.Join(err, fmt.Errorf("replace %s: %w", release.PathRuntimeImage, rerr))
			}
			id, err = noderoot.ImportImage(ctx, s.e, s.e.base, ".")
		}
	}
	if err != nil {
		return workflow.Result{}, err
	}
	if err := noderoot.RemoveUnpacked(s.e, "."); err != nil {
		return workflow.Result{}, err
	}
	return workflow.Result{Facts: map[string]string{factImageID: id}}, nil
}

// Verify asks the provider whether it holds the image: held is done (the
// unpacked copy is removed), absent is not done. A provider that cannot
// answer leaves the outcome unknown.
func (s runtimeStep) Verify(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	id, held, err := noderoot.ImageHeld(ctx, s.e, s.e.base)
	switch {
	case err != nil:
		return workflow.Unknown, workflow.Result{}, err
	case !held:
		return workflow.NotDone, workflow.Result{}, nil
	}
	if err := noderoot.RemoveUnpacked(s.e, "."); err != nil {
		return workflow.Unknown, workflow.Result{}, err
	}
	return workflow.Done, workflow.Result{Facts: map[string]string{factImageID: id}}, nil
}

// Check: the provider holds the image and no unpacked copy is left.
func (s runtimeStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	id, held, err := noderoot.ImageHeld(ctx, s.e, s.e.base)
	if err != nil || !held {
		return notDone, workflow.Result{}, err
	}
	if _, err := os.Lstat(s.e.Node().Root + "/" + noderoot.PathUnpacked); err == nil {
		return notDone, workflow.Result{}, nil
	}
	return done, workflow.Result{Facts: map[string]string{factImageID: id}}, nil
}
