//go:build !crashtest

package safefile

// Failpoint marks a durable point where the crash harness may kill the
// process. It compiles to nothing in the shipped binary.
func Failpoint(string) {}

// noteSync records an fsync for tests; nothing in the shipped binary.
func noteSync(string) {}
