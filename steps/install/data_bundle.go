package install

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// openBundle opens the installation's bundle directory.
func (e *NodeEnv) openBundle() (*safefile.Root, error) {
	b, err := safefile.OpenRoot(e.in.Bundle)
	if err != nil {
		return nil, noderoot.Refusal("Give --bundle the offline bundle's directory", fmt.Errorf("%w: %w", noderoot.ErrBundle, err))
	}
	return b, nil
}

// bundleCurrent is CurrentRelease of a bundle: its own release.
func (e *NodeEnv) bundleCurrent() (*noderoot.Metadata, error) {
	b, err := e.openBundle()
	if err != nil {
		return nil, err
	}
	defer b.Close()
	md, err := noderoot.ReadBundleRelease(b, ".", e.base.Provider, "")
	if err != nil {
		return nil, noderoot.Artifact(fmt.Errorf("%w: %w", noderoot.ErrBundle, err))
	}
	e.current = md
	e.KeepRelease(md)
	return md, nil
}

// Release implements Data: from the console, or from the bundle, where a
// release other than the current one is in releases/<src>/. A bundle
// without it is refused: the current Runtime never stands in for the
// selected one.
func (e *NodeEnv) Release(ctx context.Context, src string) (*noderoot.Metadata, error) {
	if e.in.Bundle == "" {
		return e.Env.Release(ctx, src)
	}
	if md, ok := e.KeptRelease(src); ok {
		return md, nil
	}
	if !release.IsCommit(src) {
		return nil, fmt.Errorf("release %q is not a source commit", src)
	}
	cur, err := e.CurrentRelease(ctx)
	if err != nil {
		return nil, err
	}
	b, err := e.openBundle()
	if err != nil {
		return nil, err
	}
	defer b.Close()
	dir := noderoot.BundleReleaseDir(cur.Release.Manifest.SourceCommit, src)
	md, err := noderoot.ReadBundleRelease(b, dir, e.base.Provider, src)
	if errors.Is(err, os.ErrNotExist) {
		return nil, noderoot.Refusef(noderoot.ErrBundle, "Make the bundle from a console that holds Core's selected release",
			"%s holds release %s only; Core selected the Runtime of release %s (%s)", e.in.Bundle, cur.Release.Manifest.SourceCommit, src, err)
	}
	if err != nil {
		return nil, noderoot.Artifact(fmt.Errorf("%w: %w", noderoot.ErrBundle, err))
	}
	e.KeepRelease(md)
	return md, nil
}

// FetchReleaseFile implements Data: a fixed file of a release, from the
// console or the bundle.
func (e *NodeEnv) FetchReleaseFile(ctx context.Context, src, name string) ([]byte, error) {
	if e.in.Bundle == "" {
		return e.Env.FetchReleaseFile(ctx, src, name)
	}
	cur, err := e.CurrentRelease(ctx)
	if err != nil {
		return nil, err
	}
	b, err := e.openBundle()
	if err != nil {
		return nil, err
	}
	defer b.Close()
	exp := noderoot.BundleExpect
	exp.MaxSize = release.MaxMetadataSize
	data, err := b.ReadFile(path.Join(noderoot.BundleReleaseDir(cur.Release.Manifest.SourceCommit, src), name), exp)
	if err != nil {
		return nil, noderoot.Artifact(fmt.Errorf("%w: %w", noderoot.ErrBundle, err))
	}
	return data, nil
}

// Download implements Data: an artifact of a release, downloaded from the
// console, or copied from the bundle with its bytes verified again.
func (e *NodeEnv) Download(ctx context.Context, src string, req download.Request) error {
	if e.in.Bundle == "" {
		return e.Env.Download(ctx, src, req)
	}
	if req.URL == "" || release.CheckFileName(req.URL) != nil {
		return fmt.Errorf("copy %s: no released file name", req.Target)
	}
	cur, err := e.CurrentRelease(ctx)
	if err != nil {
		return err
	}
	b, err := e.openBundle()
	if err != nil {
		return err
	}
	defer b.Close()
	rel := path.Join(noderoot.BundleReleaseDir(cur.Release.Manifest.SourceCommit, src), noderoot.BundleArtifactsDir, req.URL)
	err = download.CopyLocal(ctx, download.LocalSource{Root: b, Rel: rel, Expect: noderoot.BundleExpect}, req)
	if errors.Is(err, download.ErrTransfer) {
		return noderoot.Artifact(err)
	}
	return err
}
