// Package microsandbox drives the microsandbox `msb` CLI for one
// installation-private store, and keeps the store's path rule and ownership
// marker.
//
// Every call runs the node's verified msb binary with exactly the
// environment CONTRACT §4.5 names — MSB_BACKEND=local, MSB_HOME=<store>,
// MSB_PATH=<msb>, MSB_LIBKRUNFW_PATH=<firmware> — plus a fixed PATH,
// HOME=<store> and LANG=C.UTF-8; nothing of the caller's environment (no
// proxy, no token) reaches it. Each call has a timeout (the process group
// is killed when it expires), a bound on the output it keeps, and a strict
// parser for that output.
//
// A call does not outlive the run that made it: msb gets SIGKILL as its
// parent death signal (the calling goroutine keeps its OS thread until msb
// is waited for, since the signal follows the forking thread), and msb and
// whatever it starts inherit the lock files the run holds (CLI.Inherit, the
// installation's install.lock), so that when the runner is killed the lock
// stays held until the last of them has exited.
//
// Inventories are the basis of collection, so they distinguish absence
// from failure: a query that fails in any way — start failure, timeout,
// non-zero exit, output past its bound, one malformed line — is an
// *InventoryError (errors.Is ErrInventoryIncomplete), never an empty
// inventory. The caller then keeps every byte. An image is removed only
// when a complete inventory shows it, and is verified gone by a second
// complete inventory.
//
// The store of an installation is ~/.oac/m/<first 12 hex of
// sha256(installation_id)>; a later generation with other runtime or
// firmware hashes uses ~/.oac/m/<first 12 hex of
// sha256("<installation_id>:<runtime_sha256>:<firmware_sha256>")>. The
// whole path is at most 48 bytes, because microsandbox places Unix sockets
// under it. A store holds oac-installation.json naming its installation; a
// non-empty store without it, or naming another installation, is not ours.
package microsandbox
