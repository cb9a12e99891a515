// Package generation is the generation helper's side of a node: the
// prepare, repair and collect workflows the node program runs as the
// service account (oac-node), in files named after their workflow and state
// (prepare_, repair_, collect_), and Run, which drives them. The node root
// they work on — Env and Data, the locks, the records, the console, the
// Runtime files and image, private-only removal — is package noderoot.
//
//	prepare    lock → lease (Inspect) → plan → download → import_start →
//	           import (Verify) → publish → clear_plan         (prepare_*.go)
//	repair     lock → verify → download → probe               (repair_*.go)
//	collect    lock → recheck → collecting → native (Verify) →
//	           native_complete → release_files → dropped      (collect_*.go)
//
// The node program runs the retained helper (generation-preparer
// --generation-action A): Run takes the locks (noderoot.Env.Acquire), then
// runs the engine against the generation's journal
// <node root>/journals/<action>-<g>.journal, all as the account. Steps
// never call one another and never touch a journal: the engine runs them
// and records every transition. The first state, lock, only checks that
// the locks are held: a step cannot hold a lock across runs.
//
// Preparation downloads a later generation's Runtime files into
// releases/<source_commit>/ (or finds them in the node root), imports the
// image unless the provider already holds it, and publishes <g>.json.
// Repair restores only missing files at their original paths and, for a
// published generation whose image the provider lost, imports it again
// from the verified archive before the readiness probe decides. Collection
// removes what noderoot.PlanRemoval proves private and unreferenced;
// microsandbox images only after a complete inventory shows them (any
// inventory failure keeps every byte, ErrNativeKept), never Docker images.
//
// The service-account steps of install and uninstall are not here: each
// workflow's package (steps/install, steps/uninstall) holds all its
// states' steps, whichever account runs them.
//
// Package generationtest builds the fixture releases, the TLS console and
// Core, and the node roots the tests of this package, of noderoot, of
// install and uninstall, and of the command run against.
package generation
