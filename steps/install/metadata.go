package install

import (
	"context"
	"errors"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// metadataStep reads and verifies the console's current release (the node
// program's) and the release Core selected for the Runtime (it may be
// older), checks that the selection matches the specification, and writes
// installation.json, preparation.json and runtime-artifacts.json. Before
// registration those records are disposable and replaced when they differ;
// after it any difference refuses.
type metadataStep struct{ e *NodeEnv }

func (s metadataStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	e := s.e
	cur, err := e.CurrentRelease(ctx)
	if err != nil {
		return workflow.Result{}, err
	}
	spec := e.spec
	sel, err := e.Release(ctx, spec.Runtime.SourceCommit)
	if err != nil {
		return workflow.Result{}, err
	}
	if err := release.MatchRelease(spec, sel.Release.Manifest); err != nil {
		return workflow.Result{}, noderoot.Artifact(err)
	}
	registered, err := e.Registered()
	if err != nil {
		return workflow.Result{}, err
	}
	replace := !registered
	if err := e.writeRecord(layout.InstallationFile, e.installationRecord(), replace); err != nil {
		return workflow.Result{}, refusalIfConflict(err)
	}
	if err := e.writeRecord(layout.PreparationFile, map[string]any{"source_url": e.source}, replace); err != nil {
		return workflow.Result{}, refusalIfConflict(err)
	}
	sums := map[string]any{}
	for _, f := range noderoot.ReleaseFiles(sel.Release) {
		sums[f.Rel] = f.SHA256
	}
	ra := map[string]any{"installation_id": e.in.InstallationID, "source_commit": spec.Runtime.SourceCommit, "sha256": sums}
	if err := e.writeRecord(layout.RuntimeArtifactsFile, ra, replace); err != nil {
		return workflow.Result{}, refusalIfConflict(err)
	}
	e.Logf("node program from release %s, Runtime from release %s", cur.Release.Manifest.SourceCommit, spec.Runtime.SourceCommit)
	return workflow.Result{Facts: map[string]string{
		factSourceCommit: spec.Runtime.SourceCommit,
		factNodeRelease:  cur.Release.Manifest.SourceCommit,
	}}, nil
}

// installationRecord is installation.json (and, once registered,
// registered.json): CONTRACT §3.
func (e *NodeEnv) installationRecord() map[string]any {
	rec := map[string]any{
		"installation_id":      e.in.InstallationID,
		"provider":             e.base.Provider,
		"core_url":             noderoot.TrimOrigin(e.in.CoreOrigin),
		"source_commit":        e.spec.Runtime.SourceCommit,
		"generation":           e.Identity().Generation,
		"specification_digest": e.Identity().SpecificationDigest,
	}
	if e.in.AllowInsecureOrigin {
		rec["allow_insecure_origin"] = true
	}
	return rec
}

// refusalIfConflict turns a registered node's conflicting record into a
// refusal that names the way forward.
func refusalIfConflict(err error) error {
	if errors.Is(err, noderoot.ErrConflict) {
		return noderoot.Refusal("This node is registered for another deployment; remove it in Web, run --uninstall, then add it again with a new command", err)
	}
	return err
}

// Check: the three records hold what this run computes; a registered
// node's different record refuses.
func (s metadataStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	cur, err := e.CurrentRelease(ctx)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	spec := e.spec
	sel, err := e.Release(ctx, spec.Runtime.SourceCommit)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	if err := release.MatchRelease(spec, sel.Release.Manifest); err != nil {
		return 0, workflow.Result{}, noderoot.Artifact(err)
	}
	registered, err := e.Registered()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	sums := map[string]any{}
	for _, f := range noderoot.ReleaseFiles(sel.Release) {
		sums[f.Rel] = f.SHA256
	}
	out := done
	for _, r := range []struct {
		rel string
		v   map[string]any
	}{
		{layout.InstallationFile, e.installationRecord()},
		{layout.PreparationFile, map[string]any{"source_url": e.source}},
		{layout.RuntimeArtifactsFile, map[string]any{"installation_id": e.in.InstallationID, "source_commit": spec.Runtime.SourceCommit, "sha256": sums}},
	} {
		st, err := e.recordState(r.rel, r.v)
		switch {
		case errors.Is(err, noderoot.ErrConflict) && registered:
			return 0, workflow.Result{}, refusalIfConflict(err)
		case errors.Is(err, noderoot.ErrConflict):
			out = notDone
		case err != nil:
			return 0, workflow.Result{}, err
		case st == noderoot.FileMissing:
			out = notDone
		}
	}
	return out, workflow.Result{Facts: map[string]string{
		factSourceCommit: spec.Runtime.SourceCommit,
		factNodeRelease:  cur.Release.Manifest.SourceCommit,
	}}, nil
}
