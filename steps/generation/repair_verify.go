package generation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// repairTarget is what repair works on: the generation's configuration
// (never reconstructed) and its release directory.
type repairTarget struct {
	gc  *noderoot.GenerationConfig
	dir string
}

// findRepairTarget finds the configuration repair keeps: the base
// provider.json, the published <g>.json, or else an exact preparation plan.
// Without one it refuses; a configuration holding another specification
// than the run's refuses too.
func findRepairTarget(d noderoot.Data) (*repairTarget, error) {
	gc, err := noderoot.CurrentConfig(d)
	if err != nil {
		return nil, workflow.Unchanged(err)
	}
	g := d.Identity().Generation
	if gc == nil {
		return nil, workflow.Unchanged(noderoot.Refusef(ErrNoConfiguration, "Repair never reconstructs a configuration; the node prepares the generation again",
			"generation %d", g))
	}
	if err := noderoot.CheckIdentity(d, gc.Config); err != nil {
		return nil, workflow.Unchanged(noderoot.Refusal("", err))
	}
	if !gc.Base {
		base, err := d.Base()
		if err != nil {
			return nil, err
		}
		if err := provider.CheckPlan(gc.Config, base, d.Node().Root, d.Home()); err != nil {
			what := "configuration"
			if !gc.Final {
				what = "preparation plan (not an exact plan)"
			}
			return nil, workflow.Unchanged(noderoot.Refusal("", fmt.Errorf("the %s of generation %d: %w", what, g, err)))
		}
	}
	dir, err := noderoot.ReleaseRel(d, gc.Config)
	if err != nil {
		return nil, workflow.Unchanged(noderoot.Refusal("", err))
	}
	return &repairTarget{gc: gc, dir: dir}, nil
}

// repairVerifyStep verifies the selected release (metadata from the
// console, verified and matched to the retained specification; equal to
// the release copies or runtime-artifacts.json the node keeps) and every
// existing sibling file's checksum. Conflicting bytes refuse: repair never
// replaces a file.
type repairVerifyStep struct{ d noderoot.Data }

func (s repairVerifyStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	d := s.d
	t, err := findRepairTarget(d)
	if err != nil {
		return workflow.Result{}, err
	}
	spec := t.gc.Config.Specification
	md, err := d.Release(ctx, spec.Runtime.SourceCommit)
	if err != nil {
		return workflow.Result{}, err
	}
	if err := release.MatchRelease(spec, md.Release.Manifest); err != nil {
		return workflow.Result{}, noderoot.Artifact(err)
	}
	if err := checkKeptMetadata(d, t, md); err != nil {
		return workflow.Result{}, workflow.Unchanged(noderoot.Refusal("", err))
	}
	missing, err := noderoot.CheckReleaseFiles(d, t.dir, md)
	if err != nil {
		return workflow.Result{}, workflow.Unchanged(noderoot.Refusal("", err))
	}
	if len(missing) > 0 {
		d.Logf("generation %d misses %v", d.Identity().Generation, missing)
	}
	return workflow.Result{}, nil
}

// checkKeptMetadata compares what the node kept about a release with the
// release as the console serves it: the copies in releases/<src>, or for
// the node root's files the checksums of runtime-artifacts.json.
func checkKeptMetadata(d noderoot.Data, t *repairTarget, md *noderoot.Metadata) error {
	if t.dir != "." {
		for _, f := range []struct {
			name string
			want []byte
		}{{release.ManifestName, md.Manifest}, {release.SumsName, md.Sums}} {
			rel := path.Join(t.dir, f.name)
			got, err := d.Root().ReadFile(rel, safefile.Expect{UID: d.UID(), Mode: 0o600, MaxSize: release.MaxMetadataSize})
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("%w: %w", noderoot.ErrConflict, err)
			}
			if !bytes.Equal(got, f.want) {
				return fmt.Errorf("%w: %s differs from the release the console serves", noderoot.ErrConflict, rel)
			}
		}
		return nil
	}
	ra, err := noderoot.ReadRuntimeArtifacts(d)
	if err != nil || ra == nil {
		return err
	}
	if ra.SourceCommit != md.Release.Manifest.SourceCommit {
		return nil // the root holds another release's record; it proves nothing here
	}
	for _, f := range noderoot.ReleaseFiles(md.Release) {
		if sum, ok := ra.SHA256[f.Rel]; ok && sum != f.SHA256 {
			return fmt.Errorf("%w: runtime-artifacts.json records sha256 %s for %s, the release declares %s", noderoot.ErrConflict, sum, f.Rel, f.SHA256)
		}
	}
	return nil
}
