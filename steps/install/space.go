package install

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// CheckSpaceName is the name of the free-space check.
const CheckSpaceName = "free disk space for the node's files"

// statfs reads a file system's counts (tests replace it).
var statfs = unix.Statfs

// spaceMetadataTimeout bounds each metadata read of the space check.
var spaceMetadataTimeout = 15 * time.Second

// SpaceCheck refuses a new node, before any change, when the file system
// of /var/lib (where the node root will be) has less space available to
// an unprivileged user (statfs f_bavail) than the node's files take: the
// node program of the console's current release, the Runtime files of
// the release Core selected, and for microsandbox the unpacked Runtime
// archive (unpacked_size: msb loads an unpacked copy; the Docker Engine
// is handed the archive's gunzipped stream, so Docker needs no such room), less
// the archive when the Docker Engine already holds the image. The sizes come from the release
// metadata, read from the console or the bundle and verified as the
// service account verifies them.
//
// A known node or an interrupted first run leaves the check to the
// downloads step, which counts what is already in place (Skip says so);
// so does a console that cannot be read: the check is skipped, not failed.
type SpaceCheck struct {
	Host     layout.Host
	Provider string
	// Spec is Core's specification, whose Runtime names the selected
	// release; nil counts the current release's Runtime (the check
	// command, which has no configuration).
	Spec *release.Specification
	// SourceURL is the console origin; Bundle, when set, the offline
	// bundle the files are copied from instead.
	SourceURL string
	Bundle    string
	// Roots are the trusted roots of console requests; Proxy the proxy
	// settings.
	Roots *trust.Roots
	Proxy proxy.Env
	// Images is the Docker Engine, asked whether it already holds the
	// image (nil: it is not asked).
	Images image.Inspector
	// Skip, when set, says why the check is left to the downloads step.
	Skip string
}

// spaceCheck is the space check of an installation run: skipped for a
// known node and an interrupted first run.
func (c *Command) spaceCheck(conf *core.Configuration, known bool) *SpaceCheck {
	sc := &SpaceCheck{Host: c.Host, Provider: conf.Provider, Spec: conf.Specification, SourceURL: c.Options.SourceURL,
		Bundle: c.Options.Bundle, Roots: c.Core.Roots, Proxy: proxy.FromEnviron(c.Environ)}
	if ins, ok := c.Engine.(image.Inspector); ok && conf.Provider == release.ProviderDocker {
		sc.Images = ins
	}
	sc.Skip = spaceSkip(c.Host, c.Options.InstallationID, known)
	return sc
}

// space is the check command's space check for provider: without Core's
// specification it counts the current release's Runtime, and it reads
// only a bundle's metadata (check contacts no one).
func (p Probe) space(ctx context.Context, provider string, known bool) Check {
	sc := &SpaceCheck{Host: p.Host, Provider: provider, Bundle: p.Options.Bundle}
	if conf := p.Configuration; conf != nil {
		sc.Spec, sc.SourceURL, sc.Roots, sc.Proxy = conf.Specification, p.Options.SourceURL, p.Roots, p.Proxy
	}
	if ins, ok := p.Engine.(image.Inspector); ok && provider == release.ProviderDocker && p.NoEngine == "" {
		sc.Images = ins
	}
	sc.Skip = spaceSkip(p.Host, p.Options.InstallationID, known)
	if sc.Skip == "" && sc.Bundle == "" && sc.Spec == nil {
		sc.Skip = "the sizes are in the console's release metadata, which check reads with Core's configuration (give the enrollment token on standard input); install checks the space before any change"
	}
	return sc.Run(ctx)
}

// spaceSkip says why the space check is left to the downloads step, or "".
func spaceSkip(h layout.Host, id ident.InstallationID, known bool) string {
	if known {
		return "a known node: the downloads step counts what is already in place"
	}
	if _, err := os.Lstat(JournalPath(h, id)); err == nil {
		return "an interrupted first run: the downloads step counts what is already in place"
	}
	return ""
}

// Run reads the metadata and compares; it changes nothing.
func (s *SpaceCheck) Run(ctx context.Context) Check {
	c := Check{Name: CheckSpaceName}
	if s.Skip != "" {
		c.Skipped = s.Skip
		return c
	}
	cur, sel, err := s.releases(ctx)
	if err != nil {
		c.Skipped = fmt.Sprintf("the release metadata could not be read (%v); the downloads step checks the space", err)
		return c
	}
	need := s.need(ctx, cur, sel)
	dir := filepath.Join(s.Host.Root, "/var/lib")
	avail, err := available(dir)
	if err != nil {
		c.Err = err
		return c
	}
	if avail < need {
		c.Err = fmt.Errorf("not enough free space in %s for the node's files", dir)
		c.Hint = fmt.Sprintf("They need %s and the file system of %s has %s available; free some space and run the same command again",
			bytesText(need), dir, bytesText(avail))
	}
	return c
}

// need is the bytes the node's files take on a new node.
func (s *SpaceCheck) need(ctx context.Context, cur, sel *release.Release) int64 {
	n := cur.Manifest.Artifacts[release.PathNode].Size
	warm := false
	if s.Images != nil {
		m := sel.Manifest
		want := image.Identity{ConfigDigest: m.Images[release.ImageRuntime], ManifestDigest: m.ImageManifestDigests[release.ImageRuntime]}
		_, warm, _ = image.Resolve(ctx, s.Images, want)
	}
	for _, a := range release.Catalog(s.Provider) {
		if a.Role == release.RolePolicy || a.Path == release.PathNode {
			continue
		}
		art := sel.Manifest.Artifacts[a.Path]
		if a.Path == release.PathRuntimeImage {
			if warm {
				continue
			}
			if noderoot.UnpacksArchive(s.Provider) {
				n += art.UnpackedSize
			}
		}
		n += art.Size
	}
	return n
}

// releases reads the current release and the selected one.
func (s *SpaceCheck) releases(ctx context.Context) (cur, sel *release.Release, err error) {
	if s.Bundle != "" {
		return s.bundleReleases()
	}
	cl, err := download.NewClient(download.Options{Trust: s.Roots, Proxy: s.Proxy,
		MetadataTimeout: spaceMetadataTimeout, RetrySleeps: []time.Duration{}})
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	source := strings.TrimRight(s.SourceURL, "/")
	fetch := func(dir string) (*release.Release, error) {
		m, err := cl.FetchMetadata(ctx, source+"/node-install/"+dir+release.ManifestName, release.MaxMetadataSize)
		if err != nil {
			return nil, err
		}
		sums, err := cl.FetchMetadata(ctx, source+"/node-install/"+dir+release.SumsName, release.MaxMetadataSize)
		if err != nil {
			return nil, err
		}
		return release.VerifyRelease(m, sums, s.Provider)
	}
	if cur, err = fetch(""); err != nil {
		return nil, nil, err
	}
	src := s.selected(cur)
	if src == cur.Manifest.SourceCommit {
		return cur, cur, nil
	}
	if !release.IsCommit(src) {
		return nil, nil, fmt.Errorf("release %q is not a source commit", src)
	}
	if sel, err = fetch("releases/" + src + "/"); err != nil {
		return nil, nil, err
	}
	if sel.Manifest.SourceCommit != src {
		return nil, nil, fmt.Errorf("release %s: its manifest names source commit %s", src, sel.Manifest.SourceCommit)
	}
	return cur, sel, nil
}

// selected is the source commit of the release whose Runtime the node
// gets.
func (s *SpaceCheck) selected(cur *release.Release) string {
	if s.Spec == nil || s.Spec.Runtime == nil {
		return cur.Manifest.SourceCommit
	}
	return s.Spec.Runtime.SourceCommit
}

func (s *SpaceCheck) bundleReleases() (cur, sel *release.Release, err error) {
	b, err := safefile.OpenRoot(s.Bundle)
	if err != nil {
		return nil, nil, err
	}
	defer b.Close()
	cm, err := noderoot.ReadBundleRelease(b, ".", s.Provider, "")
	if err != nil {
		return nil, nil, err
	}
	src := s.selected(cm.Release)
	dir := noderoot.BundleReleaseDir(cm.Release.Manifest.SourceCommit, src)
	if dir == "." {
		return cm.Release, cm.Release, nil
	}
	sm, err := noderoot.ReadBundleRelease(b, dir, s.Provider, src)
	if err != nil {
		return nil, nil, err
	}
	return cm.Release, sm.Release, nil
}

// bytesText is n in bytes, and in MiB when that says more.
func bytesText(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%d bytes (%d MiB)", n, n>>20)
}

// available is the bytes an unprivileged user may still write on the
// file system holding dir (download.Available's rule, through statfs).
func available(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("check free space in %s: %w", dir, err)
	}
	unit := st.Frsize
	if unit <= 0 {
		unit = st.Bsize
	}
	if unit <= 0 {
		return 0, errors.New("check free space in " + dir + ": the file system reports no block size")
	}
	return int64(st.Bavail) * unit, nil
}
