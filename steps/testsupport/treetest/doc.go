// Package treetest is the tests' one snapshot of a directory tree, its
// diff and its copy.
//
// A snapshot maps each entry below a directory to a one-line description:
// its type and permission bits, and for a regular file its size and the
// sha256 of its content, for a symbolic link its target, for a device its
// device number. Options add the owner (uid:gid), the modification time,
// or the inode, modification and change times, so that a test proves a run
// wrote nothing at all, not only that the bytes are the same. Diff lists
// the entries that differ between two snapshots, one sorted line each, ""
// when none does.
//
// It reads the tree as whatever account the test runs as; it changes
// nothing but Copy's destination. It is never part of the shipped
// installer.
package treetest
