// Package uninstall is root's side of `oac-node-install --uninstall`: the
// uninstall workflow's steps (workflow.UninstallDefinition) and Run, which
// takes the host lock first (saying so when it waits) and keeps it to the
// end, refuses before any change (a damaged bookkeeping, a missing host
// record without --force, then Core's answer), and runs the workflow
// against root's journal /var/lib/oac-node-install/<id>/uninstall.journal,
// rerunnable until complete.
//
// Root runs stop_unit, remove_unit, account and bookkeeping: it stops,
// disables and removes the unit and the env file, handles the account by
// the bookkeeping (deleted only when the installer created it and no node
// remains; otherwise the groups it added are removed and the home mode it
// changed is restored) and removes the records. The Core check, the Docker
// network, the node root and the microsandbox stores (ask_core, network,
// node_state, microsandbox_store: the states the uninstall definition marks
// workflow.ServiceAccount) are the service account's: steps/generation's
// uninstall steps, each run by an asaccount.Step as oac-node in the run's
// one privilege-separated child (asaccount.Children, role asaccount.Role),
// whose progress lines are printed to the operator; without the account
// such a step has nothing to do. The child ends before the account step
// (Command.EndChild), which keeps the account while any process of it
// runs, and in any case before the host lock is released. Sandboxes,
// volumes and images are never touched: the Runtime image's removal
// command is printed instead.
package uninstall
