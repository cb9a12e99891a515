package noderoot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/microsandbox"
	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// WantImage is the image identity a configuration's specification names.
func WantImage(c *provider.Config) image.Identity {
	rt := c.Specification.Runtime
	return image.Identity{ConfigDigest: rt.ImageID, ManifestDigest: rt.ImageManifestDigest}
}

// MicrosandboxFor is msb for the configuration's store.
func MicrosandboxFor(d Data, c *provider.Config) (Microsandbox, microsandbox.Reference, error) {
	m := c.Microsandbox
	ref, err := microsandbox.ParseReference(m.Image)
	if err != nil {
		return nil, ref, err
	}
	return d.Microsandbox(m.RuntimePath, m.RuntimeHome, m.FirmwarePath), ref, nil
}

// ImageHeld reports whether the provider already holds the configuration's
// Runtime image with its exact identity: Docker resolves it (config or
// manifest digest, linux/amd64), or msb reports the reference with its
// digest for linux/amd64. A microsandbox store that does not exist yet
// holds nothing; an msb that cannot answer is taken as not holding it (the
// archive is then fetched, which is always safe).
func ImageHeld(ctx context.Context, d Data, c *provider.Config) (string, bool, error) {
	switch {
	case c.Docker != nil:
		dk, err := d.Docker(ctx)
		if err != nil {
			return "", false, err
		}
		id, found, err := image.Resolve(ctx, dk, WantImage(c))
		return id, found, err
	case c.Microsandbox != nil:
		if _, err := os.Stat(c.Microsandbox.RuntimeHome); err != nil {
			return "", false, nil
		}
		if _, err := os.Stat(c.Microsandbox.RuntimePath); err != nil {
			return "", false, nil
		}
		cli, ref, err := MicrosandboxFor(d, c)
		if err != nil {
			return "", false, err
		}
		if cli.VerifyImage(ctx, ref) == nil {
			return ref.String(), true, nil
		}
		return "", false, nil
	}
	return "", false, fmt.Errorf("configuration without an adapter")
}

// ImportImage makes the provider hold the configuration's Runtime image
// and returns its local identity (Docker: the local image ID; microsandbox:
// the reference). An image already held is not loaded again. Otherwise,
// for Docker, the archive (downloaded if missing) is opened once and read
// once: the engine is handed its gunzipped bytes while they are proven —
// the archive's size and sha256, the gunzipped size and sha256, the
// specification's image identity (image.LoadReader) — and the stream's
// end, which the engine needs to complete the load, is released only once
// the proof holds: a refused archive fails the load, and the engine holds
// nothing of it. No unpacked copy is written, and the bytes are gunzipped
// once, by us. msb loads an uncompressed archive from a path, so for
// microsandbox the archive is unpacked to images/runtime.tar while its
// identity is proven, as before. The image must resolve after the load.
func ImportImage(ctx context.Context, d Data, c *provider.Config, dir string) (string, error) {
	if id, held, err := ImageHeld(ctx, d, c); err != nil || held {
		return id, err
	}
	switch {
	case c.Docker != nil:
		f, a, err := openArchive(ctx, d, c, dir)
		if err != nil {
			return "", err
		}
		defer f.Close()
		dk, err := d.Docker(ctx)
		if err != nil {
			return "", err
		}
		d.Logf("load the Runtime image into the Docker Engine")
		lr := image.LoadReader(f, a)
		err = dk.ImageLoadReader(ctx, lr, f.Name())
		lr.Close()
		if err != nil && !isImageRefusal(err) && ctx.Err() == nil {
			// The engine failed before the proof concluded: whether the
			// archive is at fault decides what the operator is told, so
			// the proof is finished on its own (the engine holds nothing).
			if _, verr := image.VerifyArchive(f, a); verr != nil && isImageRefusal(verr) {
				err = fmt.Errorf("%w (the engine: %v)", verr, err)
			}
		}
		if errors.Is(err, image.ErrArchiveMismatch) {
			// Other bytes than the release's: a conflict, as CheckFile
			// reports them; nothing is replaced, and the engine holds
			// nothing of them.
			return "", fmt.Errorf("%w: load %s: %w", ErrConflict, f.Name(), err)
		}
		if err != nil {
			return "", imageErr(fmt.Errorf("load %s: %w", f.Name(), err))
		}
		id, found, err := image.Resolve(ctx, dk, WantImage(c))
		if err != nil {
			return "", err
		}
		if !found {
			return "", fmt.Errorf("the Docker Engine loaded %s but does not resolve %s or %s for linux/amd64", f.Name(), WantImage(c).ConfigDigest, WantImage(c).ManifestDigest)
		}
		return id, nil
	default:
		m := c.Microsandbox
		if err := microsandbox.ClaimStore(m.RuntimeHome, c.InstallationID, d.UID()); err != nil {
			return "", err
		}
		tar, err := unpackedArchive(ctx, d, c, dir)
		if err != nil {
			return "", err
		}
		cli, ref, err := MicrosandboxFor(d, c)
		if err != nil {
			return "", err
		}
		d.Logf("load the Runtime image into the microsandbox store %s", m.RuntimeHome)
		if err := cli.LoadImage(ctx, tar, ref); err != nil {
			return "", err
		}
		if err := cli.VerifyImage(ctx, ref); err != nil {
			return "", fmt.Errorf("after loading %s: %w", tar, err)
		}
		return ref.String(), nil
	}
}

// runtimeArchive returns the release's Runtime archive and unpacked
// archive files, after checking the release against the specification,
// with the archive downloaded into dir if it is missing.
func runtimeArchive(ctx context.Context, d Data, c *provider.Config, dir string) (gz, tar RuntimeFile, err error) {
	rt := c.Specification.Runtime
	md, err := d.Release(ctx, rt.SourceCommit)
	if err != nil {
		return gz, tar, err
	}
	if err := release.MatchRelease(c.Specification, md.Release.Manifest); err != nil {
		return gz, tar, Artifact(err)
	}
	for _, f := range ReleaseFiles(md.Release) {
		switch f.Rel {
		case release.PathRuntimeImage:
			gz = f
		case PathUnpacked:
			tar = f
		}
	}
	return gz, tar, nil
}

// openArchive opens the release's Runtime archive in dir (downloaded first
// if missing) once, as a private regular file of the node account without
// following a link, makes it durable, and returns the descriptor at its
// start with what it must prove: its size and sha256, its gunzipped size
// and sha256, and the specification's image identity.
func openArchive(ctx context.Context, d Data, c *provider.Config, dir string) (*os.File, image.Archive, error) {
	rt := c.Specification.Runtime
	gz, tar, err := runtimeArchive(ctx, d, c, dir)
	if err != nil {
		return nil, image.Archive{}, err
	}
	a := image.Archive{Size: gz.Size, SHA256: gz.SHA256, UnpackedSize: tar.Size, UnpackedSHA256: tar.SHA256, Want: WantImage(c)}
	gzRel := path.Join(dir, gz.Rel)
	exp := safefile.Expect{UID: d.UID()}
	f, err := d.Root().OpenFile(gzRel, exp)
	if errors.Is(err, os.ErrNotExist) {
		if err := Mkdirs(d, path.Dir(gzRel)); err != nil {
			return nil, a, err
		}
		d.Logf("restore %s", gzRel)
		if err := FetchFile(ctx, d, rt.SourceCommit, gzRel, gz); err != nil {
			return nil, a, err
		}
		f, err = d.Root().OpenFile(gzRel, exp)
	}
	if errors.Is(err, safefile.ErrUnsafe) {
		return nil, a, fmt.Errorf("%w: %w", ErrConflict, err)
	}
	if err != nil {
		return nil, a, err
	}
	// A run that wrote it may have died before its directory fsync;
	// make it durable before it counts, as CheckFile does.
	if err := d.Root().Durable(gzRel, exp); err != nil {
		f.Close()
		return nil, a, err
	}
	return f, a, nil
}

// unpackedArchive (microsandbox only) returns the path of the release's
// unpacked Runtime archive in dir, proven to hold the specification's image: the archive is
// downloaded if missing, the unpacked copy reused if it has its declared
// bytes and unpacked again otherwise (leftover temporary copies are
// cleared first).
func unpackedArchive(ctx context.Context, d Data, c *provider.Config, dir string) (string, error) {
	rt := c.Specification.Runtime
	gz, tar, err := runtimeArchive(ctx, d, c, dir)
	if err != nil {
		return "", err
	}
	gzRel, tarRel := path.Join(dir, gz.Rel), path.Join(dir, tar.Rel)
	st, err := CheckFile(d, gzRel, gz)
	if err != nil {
		return "", err
	}
	if st == FileMissing {
		if err := Mkdirs(d, path.Dir(gzRel)); err != nil {
			return "", err
		}
		d.Logf("restore %s", gzRel)
		if err := FetchFile(ctx, d, rt.SourceCommit, gzRel, gz); err != nil {
			return "", err
		}
	}
	gzPath, tarPath := filepath.Join(d.Node().Root, gzRel), filepath.Join(d.Node().Root, tarRel)
	st, err = CheckFile(d, tarRel, tar)
	if err == nil && st == FileOK {
		return tarPath, Artifact(imageErr(image.Verify(tarPath, rt.ImageID, rt.ImageManifestDigest)))
	}
	clearUnpackLeftovers(filepath.Dir(tarPath))
	id, err := image.UnpackIdentify(gzPath, tarPath, tar.Size, tar.SHA256)
	if err != nil {
		return "", imageErr(err)
	}
	if err := id.Check(WantImage(c)); err != nil {
		return "", Artifact(err)
	}
	return tarPath, nil
}

// imageRefusals are the errors that refuse an archive's bytes or identity.
var imageRefusals = []error{image.ErrArchiveMismatch, image.ErrUnpackMismatch, image.ErrIdentityMismatch, image.ErrMalformed, image.ErrMissingBlob,
	image.ErrBlobMismatch, image.ErrPlatform, image.ErrInconsistent}

// isImageRefusal reports whether err refuses an archive's bytes or identity.
func isImageRefusal(err error) bool {
	for _, s := range imageRefusals {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// imageErr marks refusals of an archive's bytes or identity as artifact
// failures; I/O errors stay as they are.
func imageErr(err error) error {
	if isImageRefusal(err) {
		return Artifact(err)
	}
	return err
}

// clearUnpackLeftovers removes temporary copies an interrupted unpack left
// (.runtime.tar.tmp-*); they are ours and never hold verified bytes.
func clearUnpackLeftovers(dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, ".runtime.tar.tmp-*"))
	for _, n := range names {
		if fi, err := os.Lstat(n); err == nil && fi.Mode().IsRegular() {
			os.Remove(n)
		}
	}
}

// RemoveUnpacked removes the unpacked archive of dir once the image is
// imported (the downloaded archive stays for repair), and its leftovers.
// Only a microsandbox import writes one; for Docker it removes what an
// earlier version of the installer may have left.
func RemoveUnpacked(d Data, dir string) error {
	rel := path.Join(dir, PathUnpacked)
	clearUnpackLeftovers(filepath.Dir(filepath.Join(d.Node().Root, rel)))
	if err := d.Root().Remove(rel); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
