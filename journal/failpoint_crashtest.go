//go:build crashtest

package journal

import (
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
)

// The crash harness (built with -tags crashtest) sets OAC_CRASH_AT=N: the
// process kills itself with SIGKILL at the N-th failpoint it passes. With
// OAC_CRASH_COUNT set to a file name, every failpoint passed is appended to
// that file, so the harness learns how many points an uninterrupted run has.
var (
	crashAt    = envInt("OAC_CRASH_AT")
	crashCount = os.Getenv("OAC_CRASH_COUNT")
	passed     atomic.Int64
)

func envInt(name string) int64 {
	n, err := strconv.ParseInt(os.Getenv(name), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func failpoint(name string) {
	n := passed.Add(1)
	if crashCount != "" {
		if f, err := os.OpenFile(crashCount, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			f.WriteString(name + "\n")
			f.Close()
		}
	}
	if crashAt > 0 && n == crashAt {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered before this returns
	}
}

// Failpoint is failpoint for other packages' durable points.
func Failpoint(name string) { failpoint(name) }
