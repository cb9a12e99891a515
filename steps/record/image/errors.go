package image

import "errors"

// ErrMalformed means the archive is not in the form `docker save` writes:
// a missing or unreadable index.json, manifest.json or oci-layout, JSON that
// does not parse, an unsafe or duplicated entry name, or a blob that is not a
// regular file.
var ErrMalformed = errors.New("image archive is malformed")

// ErrMissingBlob means a descriptor names a blob the archive does not hold.
var ErrMissingBlob = errors.New("image archive lacks a referenced blob")

// ErrBlobMismatch means a blob's bytes do not hash to its name, or its size
// differs from the descriptor that references it: the archive was altered or
// damaged.
var ErrBlobMismatch = errors.New("image archive blob does not match its digest or size")

// ErrPlatform means the archive does not hold exactly one linux/amd64 image:
// it holds several images or platforms, or another platform.
var ErrPlatform = errors.New("image archive does not hold exactly one linux/amd64 image")

// ErrInconsistent means the archive's own records disagree: the legacy
// manifest.json points at other blobs than the OCI manifest, or the config's
// rootfs.diff_ids do not describe the manifest's layers.
var ErrInconsistent = errors.New("image archive records disagree")

// ErrIdentityMismatch means the archive is well formed but its config or
// manifest digest is not the one the release manifest names.
var ErrIdentityMismatch = errors.New("image archive identity differs from the release manifest")

// ErrUnpackMismatch means the gunzipped archive's size or sha256 differs from
// the release manifest's unpacked_size / unpacked_sha256. Nothing was
// published at the target path.
var ErrUnpackMismatch = errors.New("unpacked image archive differs from the release manifest")

// ErrArchiveMismatch means the compressed archive's size or sha256
// differs from the release manifest's (or, when loading, from the bytes
// proven before).
var ErrArchiveMismatch = errors.New("image archive differs from the release manifest")

// ErrBadDigest means a digest given to this package is not of the form
// sha256:<64 lowercase hex> (or, for Unpack, 64 lowercase hex).
var ErrBadDigest = errors.New("malformed digest")
