// Package generation is the service account's side of a node: every step
// that runs as oac-node, in files named after its workflow and state
// (install_, uninstall_, prepare_, repair_, collect_), and the node root as
// that account sees it. No step here runs as root: root's packages take
// from it only the install and uninstall inputs and answers their requests
// carry, the servers that answer them in the child, and a few readers and
// helpers (a bundle's metadata, Core's configuration, the node identity,
// RemoveTree).
//
//	install    node_root, metadata, downloads, helper, lease, runtime,
//	           network, provider_config, register, wait_ready (root's
//	           states come between: env_file, unit, start before wait_ready)
//	           (install_*.go; InstallSteps, InstallServer, RunInstallStep,
//	           CheckInstallSteps)
//	uninstall  ask_core, network, node_state, microsandbox_store
//	           (uninstall_*.go; UninstallServer, RunUninstallStep)
//	prepare    lock → lease (Inspect) → plan → download → import_start →
//	           import (Verify) → publish → clear_plan         (prepare_*.go)
//	repair     lock → verify → download → probe               (repair_*.go)
//	collect    lock → recheck → collecting → native (Verify) →
//	           native_complete → release_files → dropped      (collect_*.go)
//
// Who runs what, as oac-node:
//
//	root's install and uninstall engines ── asaccount.Step ─▶ one child
//	    for the run (asaccount.Children), role asaccount.Role, which hands
//	    each request to InstallServer or UninstallServer: each step's Run
//	    and Verify, recorded in root's journal, and install's Check of
//	    every step (StepCheck)
//	the node program ── the retained helper (generation-preparer
//	    --generation-action A): Run, the engine and the generation's journal
//	    <node root>/journals/<action>-<g>.journal, all as the account
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
//	                          images/runtime.tar, native/… (microsandbox),
//	                          manifest.json and SHA256SUMS (release copies)
//	the provider              Docker image / microsandbox store image
//
// The shared files hold that view, one concern each: data.go (Data, the
// narrow accessor steps see, so each can be tested with a stub), env.go and
// install_env.go (Env and InstallEnv, the real ones), lock.go (install.lock
// and the lease), records.go and identity.go (preparation.json,
// runtime-artifacts.json, state/node/identity.json), config.go (a
// generation's configuration), files.go and install_bundle.go (releases
// from the console or a bundle), core.go (Core asked with the node's
// credential, through steps/host/core), runtime_image.go, references.go and
// removal.go (import and private-only removal), and status.go (what
// steps/status's child reads through this package). Steps never call one
// another and never touch a journal: an engine runs them and records every
// transition. The locks are not steps: a step cannot hold a lock across
// runs, so Run takes the installation lock and the generation's exclusive
// lease before the engine starts, on every run, and the first step only
// checks that they are held.
//
// Trust flows as in the installer: the specification comes from Core's
// authenticated configuration route for exactly this generation and must
// have the digest the node asked for; release metadata comes from the
// console named in preparation.json, verified by SHA256SUMS and matched to
// the specification; artifacts are verified by size and sha256 before they
// are published; the image archive's identity is proven before any import.
// Failures to obtain or prove those bytes are *ArtifactError, which the
// helper command turns into exit status 65 — by type, never by text. A
// refusal is a workflow.Refusal; the child reports it as class refused.
//
// A later generation keeps its Runtime files in releases/<source_commit>/,
// or in the node root itself when it runs the installation's own release
// from there. The image archive is downloaded only when the provider does
// not already hold the image; the unpacked copy is removed once the import
// is done, the downloaded archive stays for repair. Repair restores only
// missing files at their original paths and, for a published generation
// whose image the provider lost, imports it again from the verified archive
// before the readiness probe decides.
//
// Collection removes only what it can prove is private and unreferenced:
// Docker images never; a microsandbox image only after a complete inventory
// shows it (any inventory failure keeps every byte); release files only
// when no other retained configuration uses their directory, each one
// hash-checked against the local release copies (or runtime-artifacts.json
// for the node root's original files) before the first deletion.
// Configurations, plans, collection journals and the manifests stay as
// receipts. Uninstall's node_state removes the node root without following
// a link; microsandbox_store removes the installation's stores only once
// Core confirmed the removal (with --force it keeps them and prints the
// command that removes each). Neither touches sandboxes, volumes or images.
//
// Package generationtest builds the fixture releases, the TLS console and
// Core, and the node roots the tests of this package, of install and
// uninstall, and of the command run against.
package generation
