// Package image proves which Runtime image an archive holds and finds it in
// the local Docker engine.
//
// The release manifest names the Runtime image twice: images.runtime is the
// Docker config digest (the image ID in Docker's classic image store) and
// image_manifest_digests.runtime the OCI manifest or index digest (the image
// ID in the containerd image store). Both are derived from the same archive,
// as `docker save` writes it: an OCI layout (oci-layout, index.json,
// blobs/sha256/...) plus the legacy manifest.json every docker load reads.
//
//	runtime.tar.gz ──Unpack──▶ runtime.tar ──Identify──▶ Identity{ConfigDigest, ManifestDigest}
//	   (size, sha256 of the gunzipped bytes      (every blob hashed, every record
//	    checked before the atomic rename)         cross-checked, one linux/amd64 image)
//
//	Identity ──Resolve(engine)──▶ local image ID, or not found ⇒ load runtime.tar, Resolve again
//
// UnpackIdentify does both in one pass over the decompressed stream. The
// archive is read once, streaming: blobs may come in any order, so each
// blob's digest and size are recorded while reading and the records are
// checked after the end of the archive. Nothing here imports or removes an
// image; a refused archive is refused before any import.
//
// Package imagetest builds fixture archives for the tests.
package image
