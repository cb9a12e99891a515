package console

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// Modes of an offline bundle's directories and files: the service account
// reads them, nobody but their owner writes them; the installer binary is
// executable, so the operator runs it from the bundle.
const (
	bundleDirPerm  = 0o755
	bundleFilePerm = 0o644
	bundleExecPerm = 0o755
)

// BundleResult tells what WriteBundle wrote.
type BundleResult struct {
	// Current is the active release, written at the bundle's top.
	Current string
	// Releases are the other releases, written in releases/<commit>/.
	Releases []string
	// Missing lists the declared artifacts the payload does not hold (the
	// console redirects them to the release host), as <commit>/<file>: the
	// bundle lacks them.
	Missing []string
}

// WriteBundle writes an offline bundle (--bundle) at dst, a directory that
// must not exist yet, from the console payload payloadDir: a copy of the
// console's /node-install/ tree. The active release's fixed files and
// artifacts are at the top, as the console serves them; each release of
// others (besides the active one) is in releases/<commit>/ with the same
// names. Every file is read from the payload without following a link and
// checked as it is copied: fixed files against SHA256SUMS, artifacts
// against the manifest's size and sha256. Directories are 0755, files 0644
// (the installer binary 0755), each written through a pending file,
// fsynced, and its directory fsynced.
// Declared artifacts the payload does not hold are listed in Missing.
func WriteBundle(payloadDir, dst string, others []string) (*BundleResult, error) {
	cur, err := ReadActive(payloadDir)
	if err != nil {
		return nil, err
	}
	if cur == "" {
		return nil, fmt.Errorf("write bundle: %s has no active release", payloadDir)
	}
	res := &BundleResult{Current: cur}
	src, err := safefile.OpenRootTrusted(payloadDir)
	if err != nil {
		return nil, fmt.Errorf("write bundle: %w", err)
	}
	defer src.Close()
	// Durably: a bundle whose directory's name a power cut loses is gone.
	if err := safefile.Mkdir(dst, 0o700); err != nil {
		return nil, fmt.Errorf("write bundle: %w", err)
	}
	out, err := safefile.OpenRoot(dst)
	if err != nil {
		return nil, fmt.Errorf("write bundle: %w", err)
	}
	defer out.Close()
	if err := copyRelease(src, out, cur, ".", res); err != nil {
		return nil, err
	}
	for _, c := range others {
		if c == cur {
			continue
		}
		if !release.IsCommit(c) {
			return nil, fmt.Errorf("write bundle: %q is not a source commit", c)
		}
		dir := path.Join(releasesDir, c)
		for _, d := range []string{releasesDir, dir} {
			if err := out.Mkdir(d, bundleDirPerm); err != nil && !errors.Is(err, os.ErrExist) {
				return nil, fmt.Errorf("write bundle: %w", err)
			}
		}
		if err := copyRelease(src, out, c, dir, res); err != nil {
			return nil, err
		}
		res.Releases = append(res.Releases, c)
	}
	// Last, as a finished bundle's mark: its top directory readable.
	if err := os.Chmod(dst, bundleDirPerm); err != nil {
		return nil, fmt.Errorf("write bundle: %w", err)
	}
	if err := out.Sync(); err != nil {
		return nil, fmt.Errorf("write bundle: %w", err)
	}
	return res, nil
}

// copyRelease copies the published release commit into dir of the bundle.
func copyRelease(src, out *safefile.Root, commit, dir string, res *BundleResult) error {
	from := releasesDir + "/" + commit
	exp := safefile.Expect{UID: safefile.AnyUID, MaxSize: release.MaxMetadataSize}
	mb, err := src.ReadFile(from+"/"+release.ManifestName, exp)
	if err != nil {
		return fmt.Errorf("write bundle: release %s: %w", commit, err)
	}
	sb, err := src.ReadFile(from+"/"+release.SumsName, exp)
	if err != nil {
		return fmt.Errorf("write bundle: release %s: %w", commit, err)
	}
	r, err := release.VerifyRelease(mb, sb, release.ProviderDocker)
	if err != nil {
		return fmt.Errorf("write bundle: release %s: %w", commit, err)
	}
	if r.Manifest.SourceCommit != commit {
		return fmt.Errorf("write bundle: release %s: its manifest names %s", commit, r.Manifest.SourceCommit)
	}
	for _, d := range []string{runtimeDir, artifactsDir} {
		if err := out.Mkdir(path.Join(dir, d), bundleDirPerm); err != nil {
			return fmt.Errorf("write bundle: %w", err)
		}
	}
	for _, name := range r.Sums.Paths() {
		if name == release.SumsName {
			continue
		}
		if err := copyChecked(src, out, from+"/"+name, path.Join(dir, name), -1, r.Sums[name]); err != nil {
			return err
		}
	}
	for _, p := range sortedNames(r.Manifest.Artifacts) {
		if !release.InCatalog(p) {
			continue
		}
		a := r.Manifest.Artifacts[p]
		err := copyChecked(src, out, from+"/"+artifactsDir+"/"+a.Filename, path.Join(dir, artifactsDir, a.Filename), a.Size, a.SHA256)
		if errors.Is(err, os.ErrNotExist) {
			res.Missing = append(res.Missing, commit+"/"+a.Filename)
			continue
		}
		if err != nil {
			return err
		}
	}
	// SHA256SUMS last: its presence marks the release's files complete.
	return copyChecked(src, out, from+"/"+release.SumsName, path.Join(dir, release.SumsName), int64(len(sb)), release.SHA256Hex(sb))
}

// copyChecked copies the file from (below src) to the new file to (below
// out), checking size (unless negative) and sha256 before it is published.
func copyChecked(src, out *safefile.Root, from, to string, size int64, sum string) error {
	in, err := src.OpenFile(from, safefile.Expect{UID: safefile.AnyUID})
	if err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	defer in.Close()
	p, err := out.OpenPending(path.Join(path.Dir(to), "."+path.Base(to)+".partial"), "bundle")
	if err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(p.File(), h), struct{ io.Reader }{in}, make([]byte, 1<<20))
	if err == nil && ((size >= 0 && n != size) || hex.EncodeToString(h.Sum(nil)) != sum) {
		err = fmt.Errorf("%s does not hold its declared bytes: %w", src.Join(from), release.ErrChecksumMismatch)
	}
	if err == nil {
		mode := os.FileMode(bundleFilePerm)
		if path.Base(to) == release.InstallerName {
			mode = bundleExecPerm
		}
		err = p.Commit(to, mode)
	}
	if err != nil {
		p.Discard()
		return fmt.Errorf("write bundle: %w", err)
	}
	return nil
}
