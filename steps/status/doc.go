// Package status is the read model of `oac-node-install status` and
// `leases`: what every installation on the host is, as root's records,
// systemd, the node's own files and Core say, and the one thing to run or
// check next when it needs attention. It changes nothing on the host.
//
// Who reads what, as whom:
//
//	root, in the command's process          the service account, in the child (Role)
//	  /var/lib/oac-node-install/<id>/         <home>/.oac/nodes/<id>/
//	    install, uninstall journals             journals/: prepare, repair, collect
//	  /etc/oac-node/<id>.json (host record)     state/node/generations/: leases, records
//	  /etc/oac-node/installer.db, read-only     identity.json, registered.json
//	  /etc/passwd, /etc/group: the account      Core's identity route, with the node's
//	  systemd over D-Bus: the unit               credential, at root's address of Core
//	  /proc/locks: who runs a journal           /proc/locks: who holds a lease
//
// Root never opens a file the service account can write: the node roots are
// read by a child of this binary running as the account (privsep role Role,
// "inspect", served by Serve), which answers with the documents' types;
// root decodes that answer strictly, within DefaultTimeout (the account can
// stop its own process: the node roots are then shown as not read, with
// why, and need attention), and no node root is read when the host's account
// is not the one the bookkeeping records. Gather builds a Document for
// status, Leases a LeasesDocument for leases; their JSON form is the
// documents' format (Format).
//
// Files: document.go the documents' types; gather.go what root reads and in
// which order; host.go and bookkeeping.go root's records and systemd;
// read.go root's side of the child (deadline, strict decoding); child.go
// and node.go the account's side (node roots, journals, leases, the
// registration and Core's view, asked through steps/host/core's client with
// the node's credential, made by noderoot.NewCoreClient); advice.go the
// condition and the next command.
//
// What the account's files and Core's answers say is never trusted: every
// value is shown as data (whoever prints it sanitizes it), Core is asked
// only at the origin, insecure-origin policy and CA root recorded, and
// the advice (Installation.Next) is composed from root's facts only. The
// account's word (its identity, its journals) only chooses between
// commands root composes, never decides whether the installation exists
// or registered, and none of its text is quoted in the advice; a node's
// own workflow is the node program's to run again, as the account, never
// from root's terminal. An unreachable systemd or Core is shown and is no
// reason for attention by itself.
package status
