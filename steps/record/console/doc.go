// Package console publishes release payloads the way the OAC console holds
// them and serves them at /node-install/ (CONTRACT §1.5 and §2.1).
//
// The payload directory holds immutable releases and one pointer:
//
//	<payload>/                       0700
//	  active.json                    {"source_commit": "<rev>"}
//	  .publish.lock                  serializes Publish, Activate and Switch
//	  releases/<source_commit>/      0700, never changed once a file is there
//	    manifest.json  SHA256SUMS  oac-node-install  [node-install.pyz]
//	    runtime/seccomp.json
//	    artifacts/oac-<source_commit>-linux-amd64-<suffix> ...
//
// Publish first checks everything (the metadata against SHA256SUMS, every
// existing file against what is being published, every new artifact's size
// and sha256 while staging it in a private temporary file) and only then
// adds the missing files: a conflict anywhere adds nothing, and nothing is
// ever overwritten. Activate points active.json at a published release; an
// existing pointer naming another release is refused, and Switch is the
// explicit way to move it.
//
// Handler serves the active release's fixed names, the versioned form
// /node-install/releases/<rev>/<name>, and declared catalog artifacts; an
// artifact the console does not hold is redirected (307) to the manifest's
// versioned artifact_base_url. Everything else is 404, and only GET and HEAD
// are allowed. Files are served with http.ServeContent, so Range, If-Range
// and conditional requests work; artifacts carry a strong ETag made of their
// declared sha256, which stays valid across republication because releases
// are immutable.
package console
