package install

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// downloadsStep makes the node root hold verified copies of the node
// program (from the console's current release) and of the Runtime files of
// the selected release, downloaded from the console or copied from the
// offline bundle (--bundle). A provider that already holds the Runtime image
// under either identity skips the archive (warm image). Before
// registration, a cached file whose bytes differ from what this run needs
// is disposable and replaced; after it, a different node program refuses
// and names the three steps to move a node to another program.
type downloadsStep struct{ e *NodeEnv }

func (s downloadsStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	e := s.e
	cur, err := e.CurrentRelease(ctx)
	if err != nil {
		return workflow.Result{}, err
	}
	sel, err := e.Release(ctx, e.spec.Runtime.SourceCommit)
	if err != nil {
		return workflow.Result{}, err
	}
	registered, err := e.Registered()
	if err != nil {
		return workflow.Result{}, err
	}
	if e.in.Bundle != "" {
		// The source is chosen by the options: Release, FetchReleaseFile
		// and Download of an NodeEnv copy from the bundle.
		e.Logf("copy the node's files from the offline bundle %s", e.in.Bundle)
	}
	node := cur.Release.Manifest.Artifacts[release.PathNode]
	nodeFile := noderoot.RuntimeFile{Rel: release.PathNode, SHA256: node.SHA256, Size: node.Size, Filename: node.Filename}
	files := append([]noderoot.RuntimeFile{nodeFile}, noderoot.ReleaseFiles(sel.Release)...)
	if !registered {
		if err := dropDisposable(e, files); err != nil {
			return workflow.Result{}, err
		}
	}
	if _, err := noderoot.CheckFile(e, release.PathNode, nodeFile); errors.Is(err, noderoot.ErrConflict) {
		return workflow.Result{}, noderoot.Refusal("A registered node keeps its node program: remove the node in Web, run this command with --uninstall, then add the node again with a new command", fmt.Errorf("%s differs from the current release's node program: %w", release.PathNode, err))
	}
	_, warm, err := noderoot.ImageHeld(ctx, e, e.base)
	if err != nil {
		return workflow.Result{}, err
	}
	if err := noderoot.FetchMissing(ctx, e, ".", sel, !warm); err != nil {
		return workflow.Result{}, err
	}
	st, err := noderoot.CheckFile(e, release.PathNode, nodeFile)
	if err != nil {
		return workflow.Result{}, err
	}
	if st == noderoot.FileMissing {
		n, err := download.Missing(filepath.Join(e.Node().Root, release.PathNode), node.Size)
		if err != nil {
			return workflow.Result{}, err
		}
		if err := download.CheckSpace(e.Node().Root, n); err != nil {
			return workflow.Result{}, err
		}
		e.Logf("download %s", release.PathNode)
		if err := noderoot.FetchFile(ctx, e, cur.Release.Manifest.SourceCommit, release.PathNode, nodeFile); err != nil {
			return workflow.Result{}, err
		}
	} else {
		noderoot.ClearPartial(filepath.Join(e.Node().Root, release.PathNode))
	}
	facts := map[string]string{}
	if warm {
		facts[factWarm] = "true"
	}
	return workflow.Result{Facts: facts}, nil
}

// dropDisposable removes the files of an unregistered node that are not
// what this run needs (an earlier attempt's, or of another release), so
// that they are downloaded again. Files that match stay.
func dropDisposable(e *NodeEnv, files []noderoot.RuntimeFile) error {
	for _, f := range files {
		if f.SHA256 == "" {
			continue
		}
		_, err := noderoot.CheckFile(e, f.Rel, f)
		if !errors.Is(err, noderoot.ErrConflict) {
			continue
		}
		e.Logf("replace %s: it is not the file this installation needs", f.Rel)
		if err := e.Root().Remove(f.Rel); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("replace %s: %w", f.Rel, err)
		}
	}
	return nil
}

// Check: the node program and the Runtime files are verified copies (the
// archive only when the provider does not hold the image); a registered
// node's different node program, or any other file of its that differs,
// refuses.
func (s downloadsStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	cur, err := e.CurrentRelease(ctx)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	sel, err := e.Release(ctx, e.spec.Runtime.SourceCommit)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	registered, err := e.Registered()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	node := cur.Release.Manifest.Artifacts[release.PathNode]
	st, err := noderoot.CheckFile(e, release.PathNode, noderoot.RuntimeFile{Rel: release.PathNode, SHA256: node.SHA256, Size: node.Size, Filename: node.Filename})
	switch {
	case errors.Is(err, noderoot.ErrConflict) && registered:
		return 0, workflow.Result{}, noderoot.Refusal("A registered node keeps its node program: remove the node in Web, run this command with --uninstall, then add the node again with a new command", fmt.Errorf("%s differs from the current release's node program: %w", release.PathNode, err))
	case errors.Is(err, noderoot.ErrConflict):
		return notDone, workflow.Result{}, nil
	case err != nil:
		return 0, workflow.Result{}, err
	case st == noderoot.FileMissing:
		return notDone, workflow.Result{}, nil
	}
	_, warm, err := noderoot.ImageHeld(ctx, e, e.base)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	for _, f := range noderoot.ReleaseFiles(sel.Release) {
		if f.Rel == noderoot.PathUnpacked || (f.Rel == release.PathRuntimeImage && warm) {
			continue
		}
		st, err := noderoot.CheckFile(e, f.Rel, f)
		if errors.Is(err, noderoot.ErrConflict) && registered {
			// Once registered no node file is replaced (CONTRACT §10):
			// refused here, before the lock's writes, not by the run.
			return 0, workflow.Result{}, noderoot.Refusal("A registered node's files are not replaced: remove the node in Web, run this command with --uninstall, then add the node again with a new command",
				fmt.Errorf("%s differs from the release's: %w", f.Rel, err))
		}
		if errors.Is(err, noderoot.ErrConflict) || (err == nil && st == noderoot.FileMissing) {
			return notDone, workflow.Result{}, nil
		}
		if err != nil {
			return 0, workflow.Result{}, err
		}
	}
	facts := map[string]string{}
	if warm {
		facts[factWarm] = "true"
	}
	return done, workflow.Result{Facts: facts}, nil
}
