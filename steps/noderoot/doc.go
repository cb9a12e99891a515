// Package noderoot is the node root as the service account (oac-node) sees
// it: the files, records, locks and clients every step that runs as that
// account shares — the generation helper's prepare, repair and collect
// steps (steps/generation), the service-account steps of install and
// uninstall (steps/install, steps/uninstall), and what steps/status's
// child reads. It holds no step and no
// journal: an engine runs the steps and records every transition.
//
// The node root is ~/.oac/nodes/<id> (layout.Node); Env opens it through
// no symbolic link and checks that it is the account's, mode 0700. A
// generation g of a node lives in three places:
//
//	state/node/generations/   <g>.lease, <g>.lease-identity  (package lease)
//	                          <g>.preparing  plan, import_started
//	                          <g>.json       final provider configuration
//	                          <g>.collecting native_complete
//	                          <g>.dropped    never prepared again
//	<root> or <root>/releases/<source_commit>/
//	                          runtime/seccomp.json, images/runtime.tar.gz,
//	                          images/runtime.tar (microsandbox, during its
//	                          import), native/… (microsandbox),
//	                          manifest.json and SHA256SUMS (release copies)
//	the provider              Docker image / microsandbox store image
//
// One file per concern:
//
//	env.go        Options, Env (the real Data), NewEnv/Open, Bind, Close
//	data.go       Data, the narrow accessor steps see (tests stub it);
//	              Docker, Microsandbox, Metadata
//	locks.go      install.lock and the generation's exclusive lease
//	records.go    preparation.json, runtime-artifacts.json
//	identity.go   state/node/identity.json
//	config.go     provider.json and a generation's configuration
//	              (<g>.json, the plan in <g>.preparing)
//	trust.go      the roots Core and the console are trusted with
//	core.go       Core's configuration of a generation, asked with the
//	              node's credential (steps/host/core)
//	console.go    release metadata, files and downloads from the console
//	bundle.go     an offline bundle's layout and metadata
//	files.go      a release directory's Runtime files: check, fetch
//	image.go      the Runtime image: held, proven, imported
//	references.go the retained configurations that keep references
//	removal.go    collection's private-only removal of release files
//	providers.go  the Docker Engine and msb of the node's configuration
//	errors.go     Refusal, ArtifactError and the shared sentinels
//	status.go     what steps/status reads, as uninstall reads it
//
// The locks are not steps: a step cannot hold a lock across runs, so the
// caller takes install.lock and the generation's exclusive lease
// (Env.Acquire) before its engine starts, on every run; Acquire refuses,
// before any change, what the action may not touch.
//
// Trust flows as in the installer: the specification comes from Core's
// authenticated configuration route for exactly this generation and must
// have the digest the node asked for; release metadata comes from the
// console named in preparation.json (or the installation's console or
// bundle, Bind), verified by SHA256SUMS and matched to the specification;
// artifacts are verified by size and sha256 before they are published; the
// image archive's identity is proven before any import. Failures to obtain
// or prove those bytes are *ArtifactError, which the generation helper
// turns into exit status 65 — by type, never by text. A refusal is a
// workflow.Refusal (Refusal, Refusef); a privsep child reports it as class
// refused.
//
// A later generation keeps its Runtime files in releases/<source_commit>/,
// or in the node root itself when it runs the installation's own release
// from there. The image archive is downloaded only when the provider does
// not already hold the image. Docker loads the verified archive itself
// (its bytes and identity proven in one read of the descriptor it loads
// from); for msb an unpacked copy is written and removed once the import
// is done. The downloaded archive stays for repair.
//
// Removal here is private-only (PlanRemoval): release files go only when no
// other retained configuration uses their directory, each one hash-checked
// against the local release copies (or runtime-artifacts.json for the node
// root's original files) before the first deletion; an unknown hash,
// changed bytes, a link or a non-regular file refuses and nothing is
// removed. Docker images are never removed. Configurations, plans,
// collection journals and the manifests stay as receipts.
package noderoot
