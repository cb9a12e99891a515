//go:build !crashtest

package safefile

// Failpoint marks a durable point where the crash harness may kill the
// process. It compiles to nothing in the shipped binary.
func Failpoint(string) {}

// Pausepoint marks a point between two decisions of a command where the
// interleaving tests may pause it. It compiles to nothing in the shipped
// binary.
func Pausepoint(string) {}

// noteSync records an fsync for tests; nothing in the shipped binary.
func noteSync(string) {}
