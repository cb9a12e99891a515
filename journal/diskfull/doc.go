// Package diskfull is a test-only file system that runs out of space on
// demand. It exists only in test builds (-tags crashtest); the shipped
// binary never has it.
//
// An FS is a FUSE mount that passes every operation through to a backing
// directory and counts the operations that need space below a chosen
// subtree: creating a name (create, mknod, mkdir, symlink, link), renaming
// into it, writing, growing a file (truncate up, fallocate) and fsync of a
// file or directory (a journal's commit needs space for its log). Armed at
// n, the n-th such operation and every later one fail with ENOSPC, as on a
// disk that filled up; SpaceBack ends it, as an operator freeing space
// does. Reads, removals and everything outside the subtree always pass.
//
//	process ──► kernel FUSE ──► FS (counts, fails from the n-th) ──► backing dir
package diskfull
