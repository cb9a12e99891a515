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
//	Identity ──Resolve(engine)──▶ local image ID, or not found ⇒ import:
//
//	runtime.tar.gz ──LoadReader──▶ the gunzipped tar stream, to docker load
//	  (one streaming read of one descriptor, gunzipped once: the archive's size and
//	   sha256, the unpacked size and sha256, every blob hashed as it passes, every
//	   record cross-checked, one linux/amd64 image, Identity{ConfigDigest,
//	   ManifestDigest} checked against the manifest; the stream's last MiB — the
//	   tar's end — is released only once all of it holds, so a refused archive
//	   fails the load and the engine keeps nothing), then Resolve again
//
//	runtime.tar.gz ──VerifyArchive──▶ Identity: the same proof without a load
//
// No unpacked copy is written for the Docker Engine. msb loads an
// uncompressed archive from a path, so for microsandbox UnpackIdentify
// gunzips runtime.tar.gz to runtime.tar while deriving the identity, and
// publishes the copy only once it is proven. Identify and IdentifyReader
// read an uncompressed archive, IdentifyStream either form.
//
// Each pass reads the archive once, streaming: blobs may come in any
// order, so each blob's digest and size are recorded while reading and
// the records are checked after the end of the archive. Nothing here
// imports or removes an image; an archive that does not prove is never
// loaded: LoadReader's stream ends in the refusal before the engine could
// complete a load.
//
// Package imagetest builds fixture archives for the tests.
package image
