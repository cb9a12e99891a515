package noderoot

import (
	"errors"
	"fmt"
	"path"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// An offline bundle (--bundle DIR) is a copy of the console's /node-install/
// tree: each file sits at the path its console URL names below
// /node-install/.
//
//	DIR/                                 the console's current release
//	  manifest.json  SHA256SUMS  oac-node-install
//	  runtime/seccomp.json
//	  artifacts/oac-<commit>-linux-amd64-<suffix> ...
//	  releases/<source_commit>/          another release (Core's selected
//	    manifest.json  SHA256SUMS        Runtime when it is not the current
//	    runtime/seccomp.json             one), with the same names
//	    artifacts/...
//
// The node program comes from the current release, the Runtime files from
// the release Core selected; a bundle without the selected release is
// refused, never replaced by the current Runtime. Every directory and file
// of a bundle is root's and writable by neither group nor others; root
// checks all of it before the first change, and the service account, which
// copies from it, opens every file beneath the bundle without following a
// link and verifies the bytes again as it copies them.
const (
	BundleReleasesDir  = "releases"
	BundleArtifactsDir = "artifacts"
)

// BundleExpect is what every directory and file of a bundle must be.
var BundleExpect = safefile.Expect{UID: 0, DenyMode: 0o022}

// BundleReleaseDir is the directory, relative to the bundle, holding the
// files of release src in a bundle whose own release is current.
func BundleReleaseDir(current, src string) string {
	if src == current {
		return "."
	}
	return path.Join(BundleReleasesDir, src)
}

// ErrBundle: the offline bundle lacks what the installation needs or holds
// something else.
var ErrBundle = errors.New("the offline bundle")

// ReadBundleRelease reads and verifies the metadata of the release in dir
// (relative to the bundle b) for provider: manifest.json and SHA256SUMS,
// regular files as BundleExpect says, at most release.MaxMetadataSize
// bytes, opened beneath b without following a link, decoded strictly, the
// manifest listed in SHA256SUMS with its sha256. want, when not "", is the
// source commit the manifest must name. A missing file matches
// os.ErrNotExist. Errors name the files; callers add ErrBundle.
func ReadBundleRelease(b *safefile.Root, dir, provider, want string) (*Metadata, error) {
	exp := BundleExpect
	exp.MaxSize = release.MaxMetadataSize
	m, err := b.ReadFile(path.Join(dir, release.ManifestName), exp)
	if err != nil {
		return nil, err
	}
	s, err := b.ReadFile(path.Join(dir, release.SumsName), exp)
	if err != nil {
		return nil, err
	}
	r, err := release.VerifyRelease(m, s, provider)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Join(dir), err)
	}
	if want != "" && r.Manifest.SourceCommit != want {
		return nil, fmt.Errorf("%s holds release %s, not %s", b.Join(dir), r.Manifest.SourceCommit, want)
	}
	return &Metadata{Release: r, Manifest: m, Sums: s}, nil
}

// BundleFile is one file of a bundle an installation copies, with the
// bytes it must hold. Size is 0 where the release declares none (the
// seccomp profile, proven by SHA256SUMS alone).
type BundleFile struct {
	Rel    string // below the bundle
	SHA256 string
	Size   int64
}

// BundleFiles are the files of a bundle an installation of provider copies:
// the node program of the current release cur, and the Runtime files of
// the selected release sel (the image archive, the seccomp profile, and
// microsandbox's runtime files).
func BundleFiles(cur, sel *Metadata) []BundleFile {
	ccommit := cur.Release.Manifest.SourceCommit
	node := cur.Release.Manifest.Artifacts[release.PathNode]
	out := []BundleFile{{Rel: path.Join(BundleArtifactsDir, node.Filename), SHA256: node.SHA256, Size: node.Size}}
	dir := BundleReleaseDir(ccommit, sel.Release.Manifest.SourceCommit)
	for _, f := range ReleaseFiles(sel.Release) {
		switch {
		case f.Rel == PathUnpacked:
		case f.Filename == "":
			out = append(out, BundleFile{Rel: path.Join(dir, f.Rel), SHA256: f.SHA256})
		default:
			out = append(out, BundleFile{Rel: path.Join(dir, BundleArtifactsDir, f.Filename), SHA256: f.SHA256, Size: f.Size})
		}
	}
	return out
}
