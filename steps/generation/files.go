package generation

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

// fileState is what checkFile found.
type fileState int

const (
	fileMissing fileState = iota
	fileOK
)

// checkFile checks the Runtime file rel (below the node root) against f:
// missing, or a private regular file of the node account (no link, one
// link) with f's size and sha256. Anything else is ErrConflict: nothing is
// ever replaced. An f without SHA256 proves nothing, and a present file is
// then ErrUnprovenFile.
func checkFile(d Data, rel string, f runtimeFile) (fileState, error) {
	file, err := d.Root().OpenFile(rel, safefile.Expect{UID: d.UID()})
	if errors.Is(err, os.ErrNotExist) {
		return fileMissing, nil
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
	return fileOK, nil
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

// mkdirs creates the directory rel and its missing parents below the node
// root (0700), refusing links and directories of another owner.
func mkdirs(d Data, rel string) error {
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

// fetchMissing restores every missing Runtime file of the release md in
// the release directory dir (relative to the node root) at its original
// path, after checking that the existing ones hold their declared bytes:
// the seccomp profile from the console's release (checked against
// SHA256SUMS), artifacts through verified downloads. The image archive is
// included only with archive set (the provider does not hold the image
// yet); the unpacked archive is never downloaded, but its size counts when
// the archive is included. Before the first byte it checks that the file
// system has room for what is missing.
func fetchMissing(ctx context.Context, d Data, dir string, md *Metadata, archive bool) error {
	src := md.Release.Manifest.SourceCommit
	if err := mkdirs(d, dir); err != nil {
		return err
	}
	if dir != "." {
		if err := storeReleaseCopies(d, dir, md); err != nil {
			return err
		}
	}
	var missing []runtimeFile
	var need int64
	for _, f := range releaseFiles(md.Release) {
		if f.Rel == release.PathRuntimeImage && !archive {
			continue
		}
		if f.Rel == PathUnpacked {
			if archive {
				need += f.Size
			}
			continue
		}
		st, err := checkFile(d, path.Join(dir, f.Rel), f)
		if err != nil {
			return err
		}
		if st == fileOK {
			clearPartial(filepath.Join(d.Node().Root, dir, f.Rel))
		}
		if st == fileMissing {
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
		if err := mkdirs(d, path.Dir(rel)); err != nil {
			return err
		}
		d.Logf("download %s", rel)
		if err := fetchFile(ctx, d, src, rel, f); err != nil {
			return err
		}
	}
	return nil
}

// fetchFile obtains one missing Runtime file at rel.
func fetchFile(ctx context.Context, d Data, src, rel string, f runtimeFile) error {
	if f.Filename == "" { // the seccomp profile: a fixed metadata file of the release
		data, err := d.FetchReleaseFile(ctx, src, f.Rel)
		if err != nil {
			return err
		}
		if got := release.SHA256Hex(data); got != f.SHA256 {
			return artifactErr(fmt.Errorf("%s of release %s has sha256 %s, SHA256SUMS lists %s: %w", f.Rel, src, got, f.SHA256, release.ErrChecksumMismatch))
		}
		if err := d.Root().PublishOnce(rel, data, os.FileMode(f.mode())); err != nil {
			if errors.Is(err, safefile.ErrConflict) {
				return fmt.Errorf("%w: %w", ErrConflict, err)
			}
			return err
		}
		return nil
	}
	err := d.Download(ctx, src, download.Request{
		URL: f.Filename, Target: filepath.Join(d.Node().Root, rel), Size: f.Size, SHA256: f.SHA256, Mode: os.FileMode(f.mode()),
	})
	if errors.Is(err, download.ErrTargetConflict) {
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

// checkReleaseFiles checks every existing Runtime file of md in dir and
// reports the missing ones.
func checkReleaseFiles(d Data, dir string, md *Metadata) (missing []string, err error) {
	for _, f := range releaseFiles(md.Release) {
		st, err := checkFile(d, path.Join(dir, f.Rel), f)
		if err != nil {
			return nil, err
		}
		if st == fileMissing {
			missing = append(missing, f.Rel)
		}
	}
	return missing, nil
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// clearPartial removes what an interrupted download of a target that is
// now complete left beside it (a kept part file or its validator).
func clearPartial(target string) {
	for _, p := range []string{download.PartPath(target), download.ValidatorPath(target)} {
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			os.Remove(p)
		}
	}
}
