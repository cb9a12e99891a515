//go:build !crashtest

package journal

// failpoint marks a journal point where the crash harness may kill the
// process. It compiles to nothing in the shipped binary.
func failpoint(string) {}

// Failpoint is failpoint for other packages' durable points.
func Failpoint(string) {}
