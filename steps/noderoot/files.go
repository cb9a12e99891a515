package noderoot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// PathUnpacked is the unpacked Runtime archive next to the download.
const PathUnpacked = "images/runtime.tar"

// UnpacksArchive reports whether importing the Runtime image for provider
// writes the unpacked archive (images/runtime.tar) first: msb loads an
// uncompressed archive from a path; the Docker Engine is handed the
// archive's gunzipped bytes as a stream while they are proven
// (image.LoadReader), so no unpacked copy is written for Docker.
func UnpacksArchive(providerName string) bool {
	return providerName == release.ProviderMicrosandbox
}

// runtimePaths are the Runtime files of a release directory for provider,
// in catalog order, with the unpacked archive after the archive. The node
// program (role node) is the host program, not a Runtime file.
func runtimePaths(providerName string) []string {
	var out []string
	for _, a := range release.Catalog(providerName) {
		if a.Role == release.RoleNode {
			continue
		}
		out = append(out, a.Path)
		if a.Path == release.PathRuntimeImage {
			out = append(out, PathUnpacked)
		}
	}
	return out
}

func isRuntimePath(p string) bool {
	for _, q := range runtimePaths(release.ProviderMicrosandbox) {
		if p == q {
			return true
		}
	}
	return false
}

// RuntimeFile is one Runtime file of a release directory and what its
// bytes must be.
type RuntimeFile struct {
	Rel      string // catalog path below the release directory
	SHA256   string
	Size     int64  // 0: not declared (the seccomp profile)
	Filename string // released file name; "" for the seccomp profile and the unpacked archive
}

// Mode is the file's mode on the node: native executables 0700, else 0600.
func (f RuntimeFile) Mode() uint32 {
	if len(f.Rel) > 7 && f.Rel[:7] == "native/" {
		return 0o700
	}
	return 0o600
}

// ReleaseFiles are the Runtime files of a verified release, as its
// metadata declares them.
func ReleaseFiles(r *release.Release) []RuntimeFile {
	var out []RuntimeFile
	for _, p := range runtimePaths(r.Provider) {
		switch p {
		case release.PathSeccomp:
			out = append(out, RuntimeFile{Rel: p, SHA256: r.SeccompSHA256})
		case PathUnpacked:
			a := r.Manifest.Artifacts[release.PathRuntimeImage]
			out = append(out, RuntimeFile{Rel: p, SHA256: a.UnpackedSHA256, Size: a.UnpackedSize})
		default:
			a := r.Manifest.Artifacts[p]
			out = append(out, RuntimeFile{Rel: p, SHA256: a.SHA256, Size: a.Size, Filename: a.Filename})
		}
	}
	return out
}

// provenFiles are the Runtime files runtime-artifacts.json proves, for
// provider; paths without an entry have no SHA256.
func provenFiles(providerName string, ra *RuntimeArtifacts) []RuntimeFile {
	var out []RuntimeFile
	for _, p := range runtimePaths(providerName) {
		out = append(out, RuntimeFile{Rel: p, SHA256: ra.SHA256[p]})
	}
	return out
}

// FileState is what CheckFile found.
type FileState int

const (
	FileMissing FileState = iota
	FileOK
)

// CheckFile checks the Runtime file rel (below the node root) against f:
// missing, or a private regular file of the node account (no link, one
// link) with f's size and sha256. Anything else is ErrConflict: nothing is
// ever replaced. An f without SHA256 proves nothing, and a present file is
// then ErrUnprovenFile.
func CheckFile(d Data, rel string, f RuntimeFile) (FileState, error) {
	file, err := d.Root().OpenFile(rel, safefile.Expect{UID: d.UID()})
	if errors.Is(err, os.ErrNotExist) {
		return FileMissing, nil
	}
	if err != nil {
		if errors.Is(err, safefile.ErrUnsafe) {
			return 0, fmt.Errorf("%w: %w", ErrConflict, err)
		}
		return 0, err
	}
	defer file.Close()
	if f.SHA256 == "" {
		return 0, fmt.Errorf("%w: %s: no record proves its bytes", ErrUnprovenFile, file.Name())
	}
	sum, n, err := hashFile(file)
	if err != nil {
		return 0, err
	}
	if (f.Size > 0 && n != f.Size) || sum != f.SHA256 {
		return 0, fmt.Errorf("%w: %s holds %d bytes with sha256 %s, its release declares sha256 %s", ErrConflict, file.Name(), n, sum, f.SHA256)
	}
	// Already there: the run that put it there may have died before its
	// directory fsync; make it durable before it counts as present.
	if err := d.Root().Durable(rel, safefile.Expect{UID: d.UID()}); err != nil {
		return 0, err
	}
	return FileOK, nil
}

func hashFile(f *os.File) (string, int64, error) {
	h := sha256.New()
	n, err := io.CopyBuffer(h, onlyReader{f}, make([]byte, 1<<20))
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// onlyReader hides WriterTo so CopyBuffer uses the buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(b []byte) (int, error) { return o.r.Read(b) }

// Mkdirs creates the directory rel and its missing parents below the node
// root (0700), refusing links and directories of another owner.
func Mkdirs(d Data, rel string) error {
	if rel == "." || rel == "" {
		return nil
	}
	cur := ""
	for _, c := range splitPath(rel) {
		cur = path.Join(cur, c)
		if err := d.Root().Mkdir(cur, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		dir, err := d.Root().OpenDir(cur, safefile.Expect{UID: d.UID()})
		if err != nil {
			return err
		}
		dir.Close()
	}
	return nil
}

func splitPath(rel string) []string {
	var out []string
	for rel != "." && rel != "" && rel != "/" {
		dir, base := path.Split(rel)
		out = append([]string{base}, out...)
		rel = path.Clean(dir)
	}
	return out
}

// storeReleaseCopies publishes the release's manifest.json and SHA256SUMS
// in its releases/<source_commit> directory, write-once: they prove the
// directory's files later, without the network. Other bytes there are a
// conflict.
func storeReleaseCopies(d Data, dir string, md *Metadata) error {
	for _, f := range []struct {
		name string
		data []byte
	}{{release.ManifestName, md.Manifest}, {release.SumsName, md.Sums}} {
		if err := d.Root().PublishOnce(path.Join(dir, f.name), f.data, 0o600); err != nil {
			if errors.Is(err, safefile.ErrConflict) || errors.Is(err, safefile.ErrUnsafe) {
				return fmt.Errorf("%w: %w", ErrConflict, err)
			}
			return err
		}
	}
	return nil
}

// FetchMissing restores every missing Runtime file of the release md in
// the release directory dir (relative to the node root) at its original
// path, after checking that the existing ones hold their declared bytes:
// the seccomp profile from the console's release (checked against
// SHA256SUMS), artifacts through verified downloads. The image archive is
// included only with archive set (the provider does not hold the image
// yet); the unpacked archive is never downloaded, but its size counts when
// the archive is included and the provider is microsandbox (msb loads an
// unpacked copy; Docker loads the archive itself). Before the first byte
// it checks that the file system has room for what is missing.
func FetchMissing(ctx context.Context, d Data, dir string, md *Metadata, archive bool) error {
	src := md.Release.Manifest.SourceCommit
	if err := Mkdirs(d, dir); err != nil {
		return err
	}
	if dir != "." {
		if err := storeReleaseCopies(d, dir, md); err != nil {
			return err
		}
	}
	var missing []RuntimeFile
	var need int64
	for _, f := range ReleaseFiles(md.Release) {
		if f.Rel == release.PathRuntimeImage && !archive {
			continue
		}
		if f.Rel == PathUnpacked {
			if archive && UnpacksArchive(md.Release.Provider) {
				need += f.Size
			}
			continue
		}
		st, err := CheckFile(d, path.Join(dir, f.Rel), f)
		if err != nil {
			return err
		}
		if st == FileOK {
			ClearPartial(filepath.Join(d.Node().Root, dir, f.Rel))
		}
		if st == FileMissing {
			missing = append(missing, f)
			if f.Size > 0 {
				n, err := download.Missing(filepath.Join(d.Node().Root, dir, f.Rel), f.Size)
				if err != nil {
					return err
				}
				need += n
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	abs := filepath.Join(d.Node().Root, dir)
	if err := download.CheckSpace(abs, need); err != nil {
		return err
	}
	for _, f := range missing {
		rel := path.Join(dir, f.Rel)
		if err := Mkdirs(d, path.Dir(rel)); err != nil {
			return err
		}
		d.Logf("download %s", rel)
		if err := FetchFile(ctx, d, src, rel, f); err != nil {
			return err
		}
	}
	return nil
}

// FetchFile obtains one missing Runtime file at rel.
func FetchFile(ctx context.Context, d Data, src, rel string, f RuntimeFile) error {
	if f.Filename == "" { // the seccomp profile: a fixed metadata file of the release
		data, err := d.FetchReleaseFile(ctx, src, f.Rel)
		if err != nil {
			return err
		}
		if got := release.SHA256Hex(data); got != f.SHA256 {
			return Artifact(fmt.Errorf("%s of release %s has sha256 %s, SHA256SUMS lists %s: %w", f.Rel, src, got, f.SHA256, release.ErrChecksumMismatch))
		}
		if err := d.Root().PublishOnce(rel, data, os.FileMode(f.Mode())); err != nil {
			if errors.Is(err, safefile.ErrConflict) {
				return fmt.Errorf("%w: %w", ErrConflict, err)
			}
			return err
		}
		return nil
	}
	err := d.Download(ctx, src, download.Request{
		URL: f.Filename, Target: filepath.Join(d.Node().Root, rel), Size: f.Size, SHA256: f.SHA256, Mode: os.FileMode(f.Mode()),
	})
	if errors.Is(err, download.ErrTargetConflict) {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

// CheckReleaseFiles checks every existing Runtime file of md in dir and
// reports the missing ones.
func CheckReleaseFiles(d Data, dir string, md *Metadata) (missing []string, err error) {
	for _, f := range ReleaseFiles(md.Release) {
		st, err := CheckFile(d, path.Join(dir, f.Rel), f)
		if err != nil {
			return nil, err
		}
		if st == FileMissing {
			missing = append(missing, f.Rel)
		}
	}
	return missing, nil
}

// ClearPartial removes what an interrupted download of a target that is
// now complete left beside it (a kept part file or its validator).
func ClearPartial(target string) {
	for _, p := range []string{download.PartPath(target), download.ValidatorPath(target)} {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			os.Remove(p)
		}
	}
}
