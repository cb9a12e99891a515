// Package uninstall is the uninstall workflow (`oac-node-install
// --uninstall`, workflow.UninstallDefinition): every state's step,
// whichever account runs it, in the file named after the state, and Run
// (run.go), the one place the workflow is wired.
//
//	state               runs as          file
//	ask_core            service account  ask_core.go (root answers first
//	                                     from the check Run made before the
//	                                     journal; the child asks Core)
//	stop_unit           root             stop_unit.go
//	remove_unit         root             remove_unit.go
//	network             service account  network.go
//	node_state          service account  node_state.go
//	microsandbox_store  service account  microsandbox_store.go
//	account             root             account.go
//	bookkeeping         root             bookkeeping.go
//
// Data (data.go). Root's steps see Env: the options, the installation as
// root's records hold it, the adapters. The service account's steps see
// NodeOptions (the account's home and uid, the Docker adapter, the proxy
// snapshot) and Input, the uninstallation's part of the request: the
// Core address, its insecure-origin policy and the CA's sha256 come from
// root's records (the host record and the bookkeeping), never from files
// the service account can write.
//
// Wiring (run.go). Steps binds root's states to their step of Env and each
// state the definition marks workflow.ServiceAccount to an asaccount.Step
// run as oac-node in the run's one privilege-separated child
// (asaccount.Children, role asaccount.Role), whose progress lines are
// printed to the operator; without the account such a step has nothing to
// do. In the child, Server (serve.go; RunStep in process for tests)
// decodes the Input and runs the state's step.
//
// Run takes the host lock first (saying so when it waits) and keeps it to
// the end, refuses before any change (a damaged bookkeeping, a missing
// host record without --force, then Core's answer), and runs the workflow
// against root's journal /var/lib/oac-node-install/<id>/uninstall.journal,
// rerunnable until complete. Root stops, disables and removes the unit and
// the env file, handles the account by the bookkeeping (deleted only when
// the installer created it and no node remains; otherwise the groups it
// added are removed and the home mode it changed is restored) and removes
// the records. The account's node_state removes the node root without
// following a link; microsandbox_store removes the installation's stores
// only once Core confirmed the removal (with --force it keeps them and
// prints the command that removes each). The child ends before the account
// step (Command.EndChild), which keeps the account while any process of it
// runs, and in any case before the host lock is released. Sandboxes,
// volumes and images are never touched: the Runtime image's removal
// command is printed instead.
//
// Package uninstall imports steps/install (the host lock, root's records,
// CoreIdentity, InstallationLabel, ServerErrors), never the reverse.
package uninstall
