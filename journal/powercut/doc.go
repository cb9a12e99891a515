// Package powercut is a test-only file system that loses what was not made
// durable, the way LazyFS does for Jepsen. It exists only in test builds
// (-tags crashtest); the shipped binary never has it.
//
// An FS is a FUSE mount that passes every operation through to a backing
// directory and remembers, per inode of the backing directory, the last
// state made durable:
//
//   - a regular file's content, size and mode become durable by fsync or
//     fdatasync of that file (fdatasync: content and size only);
//   - a directory's entries (which name points to which inode) become
//     durable by fsync of that directory;
//   - everything else — data written but not synced, a create, link,
//     unlink, mkdir, rmdir or rename not followed by an fsync of the
//     directory holding the name (for a rename, of both directories), a
//     chmod not followed by fsync — is lost on PowerCut.
//
// PowerCut, called once the process under test is dead, reverts the backing
// directory to that durable state in place: inodes keep their numbers (an
// inode whose name was removed but not durably is held in a private limbo
// directory beside the backing one until the cut), and the mount stays up,
// so device and inode numbers read through it are those a rebooted machine
// would show. The mount uses zero entry, attribute and negative timeouts and
// never keeps the page cache across opens, so the kernel sees the reverted
// tree at once.
//
// Locks (flock, fcntl) are left to the kernel, which keeps them per mount
// inode across processes. O_DIRECT opens are served without O_DIRECT on the
// backing file (the kernel still bypasses its page cache for them).
//
//	process ──► kernel FUSE ──► FS (records fsyncs) ──► backing dir
//	                              │
//	                  PowerCut ───┘ reverts backing to the durable state
package powercut
