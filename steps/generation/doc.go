// Package generation holds the steps of the three workflows the retained
// generation helper runs for the node program: prepare, repair and collect
// (DESIGN §3.3, CONTRACT §3.2), one step per file, and what they share.
//
// A generation g of a node lives in three places:
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
// Steps see the node only through Data, a narrow accessor (data.go), so
// each can be tested with a stub; Env is the real one. Steps never call one
// another and never touch a journal: the workflow engine runs them and
// records every transition. The locks are not steps: a step cannot hold a
// lock across runs, so Run takes the installation lock and the generation's
// exclusive lease before the engine starts, on every run, and the first
// step only checks that they are held.
//
//	prepare  lock → lease (Inspect) → plan → download → import_start →
//	         import (Verify) → publish → clear_plan
//	repair   lock → verify → download → probe
//	collect  lock → recheck → collecting → native (Verify) →
//	         native_complete → release_files → dropped
//
// Trust flows as in the installer: the specification comes from Core's
// authenticated configuration route for exactly this generation and must
// have the digest the node asked for; release metadata comes from the
// console named in preparation.json, verified by SHA256SUMS and matched to
// the specification; artifacts are verified by size and sha256 before they
// are published; the image archive's identity is proven before any import.
// Failures to obtain or prove those bytes are *ArtifactError, which the
// helper command turns into exit status 65 — by type, never by text.
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
// receipts.
//
// Package generationtest builds the fixture releases, the TLS console and
// Core, and the node roots these tests and the helper command's run
// against.
package generation
