//go:build crashtest

package safefile

import (
	"os"
	"path"
	"sort"
	"strconv"
	"sync"
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

// Failpoint marks a durable point where the crash harness may kill the
// process.
func Failpoint(name string) {
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

// syncs counts the fsyncs the layer made, per cleaned path.
var syncs struct {
	sync.Mutex
	n map[string]int
}

func noteSync(name string) {
	syncs.Lock()
	defer syncs.Unlock()
	if syncs.n == nil {
		syncs.n = map[string]int{}
	}
	syncs.n[path.Clean(name)]++
}

// SyncCount returns how many times this process made the file or directory
// named p durable through the layer (fsync or fdatasync). It exists only in
// the crashtest build: tests use it to see an fsync that a SIGKILL cannot.
func SyncCount(p string) int {
	syncs.Lock()
	defer syncs.Unlock()
	return syncs.n[path.Clean(p)]
}

// SyncWatch remembers how often each of its paths was made durable, so a
// test can tell which ones an operation synced since WatchSyncs.
type SyncWatch map[string]int

// WatchSyncs starts watching paths. It exists only in the crashtest build.
func WatchSyncs(paths ...string) SyncWatch {
	w := SyncWatch{}
	for _, p := range paths {
		w[p] = SyncCount(p)
	}
	return w
}

// Unsynced returns the watched paths not made durable since WatchSyncs,
// sorted.
func (w SyncWatch) Unsynced() []string {
	var out []string
	for p, n := range w {
		if SyncCount(p) == n {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}
