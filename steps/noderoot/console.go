package noderoot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// Proxy is the proxy snapshot of every request of the run, to the console
// and to Core: Options.Download.Proxy, or when it sets nothing (the zero
// proxy.Env) the environment's.
func (e *Env) Proxy() proxy.Env {
	if e.opts.Download.Proxy != (proxy.Env{}) {
		return e.opts.Download.Proxy
	}
	return proxy.FromEnviron(os.Environ())
}

// Console returns the console client and its origin: the origin of
// preparation.json, held to the node's insecure-origin policy, or the
// installation's (Bind). The client is built on first use and kept.
func (e *Env) Console() (*download.Client, string, error) {
	if e.client != nil {
		return e.client, e.source, nil
	}
	source := e.source
	if !e.bound {
		data, err := e.ReadPrivate(layout.PreparationFile, MaxPreparationSize)
		if err != nil {
			return nil, "", fmt.Errorf("preparation record: %w", err)
		}
		p, err := ParsePreparation(data)
		if err != nil {
			return nil, "", err
		}
		// The console is held to the policy recorded for the node, as Core
		// is: plain http to a host that is not loopback would let anyone on
		// the way replace the checksums together with the files.
		nid, err := e.NodeIdentity()
		if err != nil {
			return nil, "", err
		}
		if err := provider.CheckOriginPolicy(p.SourceURL, nid.AllowInsecureOrigin); err != nil {
			return nil, "", fmt.Errorf("%w: source_url: %w", ErrRecord, err)
		}
		source = TrimOrigin(p.SourceURL)
	}
	opts := e.opts.Download
	if opts.RootCAs == nil {
		var err error
		if opts.Trust, err = e.CertPool(); err != nil {
			return nil, "", err
		}
	}
	opts.Proxy = e.Proxy()
	c, err := download.NewClient(opts)
	if err != nil {
		return nil, "", err
	}
	e.client, e.source = c, source
	return c, source, nil
}

// Built reports whether the run has built its trust roots and its console
// client. Both are built when a step first connects: parsing the system
// roots costs a process about 10 ms, which a step that never connects
// anywhere does not pay.
func (e *Env) Built() (roots, console bool) { return e.roots != nil, e.client != nil }

// KeptRelease is the verified metadata of release src this run already
// holds.
func (e *Env) KeptRelease(src string) (*Metadata, bool) {
	md, ok := e.releases[src]
	return md, ok
}

// KeepRelease holds md for the rest of the run: Release answers from it
// for its source commit.
func (e *Env) KeepRelease(md *Metadata) { e.releases[md.Release.Manifest.SourceCommit] = md }

// TrimOrigin is an origin without its trailing slashes.
func TrimOrigin(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

func releaseURL(source, src, name string) string {
	return source + "/node-install/releases/" + src + "/" + name
}

// Release implements Data.
func (e *Env) Release(ctx context.Context, src string) (*Metadata, error) {
	if md, ok := e.releases[src]; ok {
		return md, nil
	}
	if !release.IsCommit(src) {
		return nil, fmt.Errorf("release %q is not a source commit", src)
	}
	base, err := e.Base()
	if err != nil {
		return nil, err
	}
	c, source, err := e.Console()
	if err != nil {
		return nil, err
	}
	m, err := c.FetchMetadata(ctx, releaseURL(source, src, release.ManifestName), release.MaxMetadataSize)
	if err != nil {
		return nil, Artifact(err)
	}
	s, err := c.FetchMetadata(ctx, releaseURL(source, src, release.SumsName), release.MaxMetadataSize)
	if err != nil {
		return nil, Artifact(err)
	}
	r, err := release.VerifyRelease(m, s, base.Provider)
	if err != nil {
		return nil, Artifact(fmt.Errorf("release %s from %s: %w", src, source, err))
	}
	if r.Manifest.SourceCommit != src {
		return nil, Artifact(fmt.Errorf("release %s from %s: its manifest names source commit %s", src, source, r.Manifest.SourceCommit))
	}
	md := &Metadata{Release: r, Manifest: m, Sums: s}
	e.releases[src] = md
	return md, nil
}

// FetchReleaseFile implements Data.
func (e *Env) FetchReleaseFile(ctx context.Context, src, name string) ([]byte, error) {
	c, source, err := e.Console()
	if err != nil {
		return nil, err
	}
	data, err := c.FetchMetadata(ctx, releaseURL(source, src, name), release.MaxMetadataSize)
	if err != nil {
		return nil, Artifact(err)
	}
	return data, nil
}

// Download implements Data: req.URL is set to the artifact's versioned
// console URL, so downloads stay pinned to the release even if the
// console's current release changes meanwhile.
func (e *Env) Download(ctx context.Context, src string, req download.Request) error {
	c, source, err := e.Console()
	if err != nil {
		return err
	}
	if req.URL == "" {
		return fmt.Errorf("download %s: no released file name", req.Target)
	}
	req.URL = release.ArtifactURL(release.ConsoleArtifactBaseURL(source, src), req.URL)
	if req.Progress == nil && e.opts.Progress != nil {
		name, rerr := filepath.Rel(e.node.Root, req.Target)
		if rerr != nil {
			name = filepath.Base(req.Target)
		}
		report := e.opts.Progress
		req.Progress = func(done, total int64) { report(name, done, total) }
	}
	err = c.Download(ctx, req)
	if errors.Is(err, download.ErrTransfer) {
		return Artifact(err)
	}
	return err
}
