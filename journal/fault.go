//go:build !crashtest

package journal

// appendFault is the fault a test injects into the journal at path before
// it syncs the record payload (fault_crashtest.go); none in the shipped
// binary.
func appendFault(path string, payload []byte) error { return nil }
