// Package lease keeps a node's generation leases and the small records that
// describe a generation's life in state/node/generations/.
//
// Every generation g owns a permanent, private lock file <g>.lease. It is
// created once, exclusively (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600) and
// fsynced; then its identity record <g>.lease-identity — installation,
// generation, specification digest and the lease's device and inode — is
// published atomically (temporary .generation-* file, fsync, rename, fsync
// of the directory). Only then may a helper start. The lease is never
// unlinked, replaced or re-created: a lease without a durable identity is an
// interrupted initialization that is kept for inspection and refused
// forever, and a lease whose inode no longer matches its identity is refused
// even when every other attribute agrees.
//
// Every open validates everything again, also after a restart: no symbolic
// links (O_NOFOLLOW and openat2 RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH relative
// to the opened directory), one link, the expected owner, mode exactly 0600,
// a bounded size, no FIFO or device (opened O_NONBLOCK, so a FIFO never
// blocks), an identity that equals the caller's and names the opened inode,
// and a path that still names that inode after the file was read.
//
// Locks follow the platform's protocol:
//
//	native helper start            repair / collection
//	-------------------            -------------------
//	AcquireForHelper: LOCK_SH      (*Lease).TryExclusive: LOCK_EX|LOCK_NB
//	validate under the lock        busy => ErrHelperActive
//	helper inherits the fd         validate under the lock
//	Wait, then Release (close)     hold through every change, then Close
//	never LOCK_UN
//
// A shared lock lives as long as any process holds the open file
// description, so a node that exits or a caller that gives up never releases
// a running helper's reference.
//
// The other generation records (.preparing, .collecting, .dropped) are
// parsed and written here too (one file per kind), with the same safe
// reading and exact key sets, so the workflows and Inspect share one
// definition. Inspect reports every generation in the directory with its
// lease state, the processes holding the lease (from one read of
// /proc/locks) and the next command an operator runs for a stuck case.
package lease
