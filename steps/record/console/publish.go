package console

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// Names in the payload directory.
const (
	releasesDir  = "releases"
	artifactsDir = "artifacts"
	runtimeDir   = "runtime"
	lockName     = ".publish.lock"
	stagePrefix  = ".tmp-" // artifacts being staged; only Publish writes them
	filePerm     = 0o600
	dirPerm      = 0o700
)

// ReleaseFiles is one release offered to Publish.
type ReleaseFiles struct {
	// Files maps fixed names (release.FixedNames) to their bytes.
	// manifest.json, SHA256SUMS and runtime/seccomp.json are required.
	// Every file SHA256SUMS lists must be here with that sha256, and every
	// file here but SHA256SUMS must be listed.
	Files map[string][]byte
	// Artifacts maps the released file name of a declared catalog artifact
	// to a local file holding its bytes. Only artifacts the published
	// release lacks are read; declared artifacts not offered here are left
	// to the manifest's artifact_base_url.
	Artifacts map[string]string
}

// Publish publishes a release immutably at
// <payloadDir>/releases/<source_commit>/ (directories 0700, files 0600).
//
// It checks before it adds: the offered metadata must verify, every file
// already published must be byte-identical to the offered one (artifacts:
// their declared size and sha256), no undeclared file may be there, and
// every missing offered artifact is copied into a private pending file
// (safefile.Pending) and must have its declared size and sha256. Any
// failure returns an error (*ConflictError for published bytes that
// differ) and adds nothing. Then the missing artifacts are committed into
// place without replacing anything, the missing fixed files published
// write-once, SHA256SUMS last, each file and directory fsynced.
// Nothing is ever overwritten. Publishers are serialized by a lock file in
// payloadDir.
func Publish(payloadDir string, files ReleaseFiles) error {
	m, err := checkOffered(files)
	if err != nil {
		return err
	}
	rel := releasesDir + "/" + m.SourceCommit
	if err := safefile.Mkdir(payloadDir, dirPerm); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("publish release %s: %w", m.SourceCommit, err)
	}
	lock, err := safefile.Lock(filepath.Join(payloadDir, lockName), filePerm)
	if err != nil {
		return fmt.Errorf("publish release %s: %w", m.SourceCommit, err)
	}
	defer lock.Unlock()
	root, err := safefile.OpenRoot(payloadDir)
	if err != nil {
		return fmt.Errorf("publish release %s: %w", m.SourceCommit, err)
	}
	defer root.Close()
	for _, d := range []string{releasesDir, rel, rel + "/" + runtimeDir, rel + "/" + artifactsDir} {
		if err := ensureDir(root, d); err != nil {
			return fmt.Errorf("publish release %s: %w", m.SourceCommit, err)
		}
	}

	present, err := checkPublished(root, rel, m, files)
	if err != nil {
		return fmt.Errorf("publish release %s: %w", m.SourceCommit, err)
	}
	artDir := rel + "/" + artifactsDir
	var staged []stagedFile
	defer func() {
		for _, s := range staged {
			if s.p != nil {
				s.p.Discard()
			}
		}
	}()
	for _, name := range sortedNames(files.Artifacts) {
		if present[name] {
			// Already there and verified: make it durable before it
			// counts (an earlier run may have died before its fsync).
			if err := root.Durable(artDir+"/"+name, safefile.Expect{UID: safefile.AnyUID}); err != nil {
				return fmt.Errorf("publish release %s: %w", m.SourceCommit, err)
			}
			continue
		}
		_, a, _ := m.ByFileName(name)
		p, err := stage(root, artDir, name, files.Artifacts[name], a)
		if err != nil {
			return fmt.Errorf("publish release %s: %w", m.SourceCommit, err)
		}
		staged = append(staged, stagedFile{p: p, name: name})
	}

	// Everything checked: add what is missing, never replacing a file
	// (the file and its directory fsynced).
	for i, s := range staged {
		err := s.p.Commit(artDir+"/"+s.name, filePerm)
		if err != nil {
			return fmt.Errorf("publish release %s: add artifact %s: %w", m.SourceCommit, s.name, err)
		}
		staged[i].p = nil
	}
	for _, name := range publishOrder(files.Files) {
		if err := root.PublishOnce(rel+"/"+name, files.Files[name], filePerm); err != nil {
			var ce *safefile.ConflictError
			if errors.As(err, &ce) {
				return &ConflictError{Path: ce.Path, Reason: "already published with other bytes"}
			}
			return fmt.Errorf("publish release %s: %w", m.SourceCommit, err)
		}
	}
	return nil
}

// stagedFile is an artifact copied and verified, to be committed as name.
type stagedFile struct {
	p    *safefile.Pending
	name string
}

// checkOffered verifies the offered release on its own and returns its
// manifest.
func checkOffered(files ReleaseFiles) (*release.Manifest, error) {
	for _, name := range []string{release.ManifestName, release.SumsName, release.SeccompName} {
		if _, ok := files.Files[name]; !ok {
			return nil, fmt.Errorf("%w: %s missing", ErrInvalidRelease, name)
		}
	}
	r, err := release.VerifyRelease(files.Files[release.ManifestName], files.Files[release.SumsName], release.ProviderDocker)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRelease, err)
	}
	m := r.Manifest
	for _, name := range sortedNames(files.Files) {
		if !release.IsFixedName(name) {
			return nil, fmt.Errorf("%w: %s is not a file a console release holds", ErrInvalidRelease, name)
		}
		if name == release.SumsName {
			continue
		}
		want, ok := r.Sums[name]
		if !ok {
			return nil, fmt.Errorf("%w: %s is not listed in %s", ErrInvalidRelease, name, release.SumsName)
		}
		if got := release.SHA256Hex(files.Files[name]); got != want {
			return nil, fmt.Errorf("%w: %s has sha256 %s, %s lists %s: %w", ErrInvalidRelease, name, got, release.SumsName, want, release.ErrChecksumMismatch)
		}
	}
	for _, name := range r.Sums.Paths() {
		if _, ok := files.Files[name]; !ok {
			return nil, fmt.Errorf("%w: %s is listed in %s but not offered", ErrInvalidRelease, name, release.SumsName)
		}
	}
	for _, name := range sortedNames(files.Artifacts) {
		if path, _, ok := m.ByFileName(name); !ok || !release.InCatalog(path) {
			return nil, fmt.Errorf("%w: artifact %s is not a declared catalog artifact", ErrInvalidRelease, name)
		}
	}
	return m, nil
}

// checkPublished compares what is already published under rel with the
// offered release and returns the artifacts present (all verified). It
// removes staging files an interrupted Publish left (the lock is held).
func checkPublished(root *safefile.Root, rel string, m *release.Manifest, files ReleaseFiles) (map[string]bool, error) {
	anyOwner := safefile.Expect{UID: safefile.AnyUID}
	for _, name := range release.FixedNames() {
		got, err := root.ReadFile(rel+"/"+name, anyOwner)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		want, offered := files.Files[name]
		switch {
		case !offered:
			return nil, &ConflictError{Path: filepath.Join(root.Path(), rel, name), Reason: "published before but not part of this release"}
		case !bytes.Equal(got, want):
			return nil, &ConflictError{Path: filepath.Join(root.Path(), rel, name), Reason: "already published with other bytes"}
		}
	}
	allowed := map[string]bool{runtimeDir: true, artifactsDir: true}
	for _, name := range release.FixedNames() {
		if !strings.Contains(name, "/") {
			allowed[name] = true
		}
	}
	if err := onlyNames(root, rel, allowed); err != nil {
		return nil, err
	}
	if err := onlyNames(root, rel+"/"+runtimeDir, map[string]bool{strings.TrimPrefix(release.SeccompName, runtimeDir+"/"): true}); err != nil {
		return nil, err
	}

	dir, err := root.OpenDir(rel+"/"+artifactsDir, anyOwner)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	names, err := dir.ReadDir()
	if err != nil {
		return nil, err
	}
	present := map[string]bool{}
	for _, name := range names {
		full := filepath.Join(dir.Path(), name)
		if strings.HasPrefix(name, stagePrefix) {
			if err := dir.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("remove leftover staging file: %w", err)
			}
			continue
		}
		path, a, ok := m.ByFileName(name)
		if !ok || !release.InCatalog(path) {
			return nil, &ConflictError{Path: full, Reason: "not a declared artifact of this release"}
		}
		f, err := dir.OpenFile(name, anyOwner)
		if err != nil {
			return nil, err
		}
		size, sum, err := hashCopy(io.Discard, f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", full, err)
		}
		if size != a.Size || sum != a.SHA256 {
			return nil, &ConflictError{Path: full, Reason: fmt.Sprintf("has %d bytes with sha256 %s, the manifest declares %d bytes with sha256 %s", size, sum, a.Size, a.SHA256)}
		}
		present[name] = true
	}
	return present, nil
}

// onlyNames refuses an entry of directory rel outside allowed; names
// starting with "." are temporary files of write-once publication.
func onlyNames(root *safefile.Root, rel string, allowed map[string]bool) error {
	dir, err := root.OpenDir(rel, safefile.Expect{UID: safefile.AnyUID})
	if err != nil {
		return err
	}
	defer dir.Close()
	names, err := dir.ReadDir()
	if err != nil {
		return err
	}
	for _, name := range names {
		if !allowed[name] && !strings.HasPrefix(name, ".") {
			return &ConflictError{Path: filepath.Join(dir.Path(), name), Reason: "not a file of a console release"}
		}
	}
	return nil
}

// stage copies src into the pending file stagePrefix+name in directory
// dir (below root) and checks the copy against the declared artifact a.
// The caller commits the returned pending file as dir/name, or discards
// it; on error nothing is left.
func stage(root *safefile.Root, dir, name, src string, a release.Artifact) (*safefile.Pending, error) {
	in, err := os.Open(src)
	if err != nil {
		return nil, fmt.Errorf("read artifact %s: %w", name, err)
	}
	defer in.Close()
	p, err := root.OpenPending(dir+"/"+stagePrefix+name, "publish-artifact")
	if err != nil {
		return nil, fmt.Errorf("stage artifact %s: %w", name, err)
	}
	// checkPublished removed what an interrupted Publish left; should a
	// file have appeared since, its bytes are not ours.
	err = p.File().Truncate(0)
	var size int64
	var sum string
	if err == nil {
		size, sum, err = hashCopy(p.File(), io.LimitReader(in, a.Size+1))
	}
	if err == nil && (size != a.Size || sum != a.SHA256) {
		err = fmt.Errorf("%w: %s does not have the declared size %d and sha256 %s: %w", ErrInvalidRelease, src, a.Size, a.SHA256, release.ErrChecksumMismatch)
	}
	if err != nil {
		p.Discard()
		return nil, fmt.Errorf("stage artifact %s: %w", name, err)
	}
	return p, nil
}

// hashCopy copies r to w and returns the byte count and sha256 in hex.
func hashCopy(w io.Writer, r io.Reader) (int64, string, error) {
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(w, h), r, make([]byte, 1<<20))
	return n, hex.EncodeToString(h.Sum(nil)), err
}

// ensureDir creates directory rel (0700) under root, or checks that the
// existing entry is a directory reached without symbolic links.
func ensureDir(root *safefile.Root, rel string) error {
	err := root.Mkdir(rel, dirPerm)
	if !errors.Is(err, os.ErrExist) {
		return err
	}
	d, err := root.OpenDir(rel, safefile.Expect{UID: safefile.AnyUID})
	if err != nil {
		return err
	}
	return d.Close()
}

// publishOrder lists the offered fixed files in the order they are
// published: SHA256SUMS last, so its presence marks a complete release.
func publishOrder(files map[string][]byte) []string {
	var out []string
	for _, name := range sortedNames(files) {
		if name != release.SumsName {
			out = append(out, name)
		}
	}
	return append(out, release.SumsName)
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
