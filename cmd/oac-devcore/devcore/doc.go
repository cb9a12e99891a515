// Package devcore is the development console: the stand-in for the OAC
// console and Core that the installer and the stand-in node talk to in
// tests and demos. It is never a second implementation of Core.
//
// Start builds a fixture release in the data directory, publishes and
// activates it through package console, and serves it over HTTPS with its
// own CA:
//
//	<data>/
//	  ca.pem, ca-key.pem      the CA (ECDSA P-256), made once; clients trust ca.pem
//	  build/                  the fixture's files before publication
//	  node-payload/           the console payload (package console layout)
//	  release-host/           what the optional release host serves
//	  build-generation-<n>/   the fixture release of a later generation
//	  admin-key               the admin key of /core/v1 (0600, made once)
//	  core-state.json         Core's state that survives a restart (0600)
//
// The fixture release is real where the installer checks it: a Runtime image
// archive whose config and manifest digests are true (package image), a
// seccomp profile, the installer binary (or a placeholder), a node program
// (a placeholder script unless one is given), placeholder microsandbox
// files, and manifest.json and SHA256SUMS describing them. Its
// source_commit is derived from those bytes, so equal inputs give the same
// release, and a data directory can be reused.
//
// With a release host, the image archive is held only there: the manifest's
// artifact_base_url points at the release host, and the console answers
// requests for the image with a 307 redirect to it.
//
// The HTTP side is a prefix router (Server.Handle): Core's routes are
// served beside /node-install/ on the same origin, which is also Core's
// public URL (core_url):
//
//	GET  /api/v1/sandbox-node/configuration   token, or credential + X-OAC-Node-ID; ?generation=N
//	POST /api/v1/sandbox-node/enroll          token; 201 identity
//	GET  /api/v1/sandbox-node/identity        credential; ?node_id=; connected, provider_ready
//	GET  /api/v1/sandbox-node/connect         credential; ?node_id=; WebSocket in the platform's dialect (package nodeproto)
//	POST /core/v1/sandbox/enrollment-tokens   admin key; {max_active?, max_retained?}
//	GET  /core/v1/sandbox/nodes[/{id}]        admin key; online, diagnostic, rollout
//	DELETE /core/v1/sandbox/nodes/{id}        admin key; the credential gets 401 from then on
//	GET  /core/v1/sandbox/deployment          admin key; generations
//	POST /core/v1/sandbox/deployment/generations              admin key; a new release as generation N+1
//	POST /core/v1/sandbox/deployment/generations/{g}/drop     admin key; a drop grant (keep false in retention_ack)
//	GET  /core/v1/devcore/artifacts           admin key; whether artifact downloads are held
//	POST /core/v1/devcore/artifacts/pause|resume              admin key; hold or release them
//
// The last two are not Core's: they drive the console's ArtifactHold, which
// lets a test watch, or interrupt, a download in progress.
//
// Errors are {"error":{"code":…,"message":…}} with CONTRACT §2.2's codes.
// Enrollment tokens (single use, ten minutes) and connections live in
// memory: a restart forgets them. The installation id, the provider, the
// generations and the enrolled nodes (credentials only as sha256) are kept
// in core-state.json with Core's owner epoch (raised at every start, as the
// platform's node keeps the highest it saw), so an installed node keeps
// working across restarts;
// while no node is enrolled, a start resets the deployment to the current
// fixture release as generation 1.
package devcore
