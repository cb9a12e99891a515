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
// Until they move into steps/install and steps/uninstall, the
// service-account steps of those workflows are here too:
//
//	install    node_root, metadata, downloads, helper, lease, runtime,
//	           network, provider_config, register, wait_ready (root's
//	           states come between: env_file, unit, start before wait_ready)
//	           (install_*.go; InstallSteps, InstallServer, RunInstallStep,
//	           CheckInstallSteps)
//	uninstall  ask_core, network, node_state, microsandbox_store
//	           (uninstall_*.go; UninstallServer, RunUninstallStep)
//
// Root's install and uninstall engines run them through asaccount.Step in
// one child for the run (asaccount.Children, role asaccount.Role), which
// hands each request to InstallServer or UninstallServer: each step's Run
// and Verify, recorded in root's journal, and install's Check of every
// step (StepCheck). Uninstall's
// node_state removes the node root without following a link;
// microsandbox_store removes the installation's stores only once Core
// confirmed the removal (with --force it keeps them and prints the command
// that removes each). Neither touches sandboxes, volumes or images.
//
// Package generationtest builds the fixture releases, the TLS console and
// Core, and the node roots the tests of this package, of noderoot, of
// install and uninstall, and of the command run against.
package generation
