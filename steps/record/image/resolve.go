package image

import (
	"context"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"
)

// Inspector looks an image up in the local engine. steps/host/docker's Client
// implements it.
type Inspector interface {
	// ImageInspect returns the local image ID and platform of the image ref
	// names; its errors name the operation and ref. An image the engine does not hold is reported by an error with
	// a NotFound() method (the convention of containerd's errdefs, which
	// steps/host/docker follows).
	ImageInspect(ctx context.Context, ref string) (id, os, arch string, err error)
}

// notFound is the errdefs convention for "no such object".
type notFound interface{ NotFound() }

// IsNotFound reports whether err says the engine does not hold the object.
func IsNotFound(err error) bool {
	var nf notFound
	return errors.As(err, &nf)
}

// Resolve finds the image want identifies among the local engine's images.
// It inspects the config digest and then the manifest digest, and accepts a
// local image only if its ID equals one of the two and its platform is
// linux/amd64: Docker's classic store identifies an image by its config
// digest, the containerd store by its manifest or index digest, so either
// store resolves. Tags are never consulted.
//
// found is false, with a nil error, when the engine holds no such image (or
// only something else under those names): the caller loads the archive and
// resolves again. An error means the engine could not be asked.
func Resolve(ctx context.Context, ins Inspector, want Identity) (localID string, found bool, err error) {
	if !validDigest(digest.Digest(want.ConfigDigest)) || !validDigest(digest.Digest(want.ManifestDigest)) {
		return "", false, fmt.Errorf("resolve image: %w: %q, %q", ErrBadDigest, want.ConfigDigest, want.ManifestDigest)
	}
	for _, ref := range []string{want.ConfigDigest, want.ManifestDigest} {
		id, os, arch, err := ins.ImageInspect(ctx, ref)
		if IsNotFound(err) {
			continue
		}
		if err != nil {
			return "", false, err // it names the operation and the ref
		}
		if (id == want.ConfigDigest || id == want.ManifestDigest) && os == "linux" && arch == "amd64" {
			return id, true, nil
		}
	}
	return "", false, nil
}
