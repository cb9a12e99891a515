//go:build !crashtest

package testhost_test

// syncCount is -1: only the crashtest build counts fsyncs.
func syncCount(string) int { return -1 }
