//go:build crashtest

package safefile

import (
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
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
	pause(name)
}

// The interleaving tests set OAC_PAUSE_AT=N and OAC_PAUSE_DIR=D: at the N-th
// point it passes (Failpoints and Pausepoints counted together), the
// process writes D/paused, holding the point's name, and blocks until
// D/release exists; then it goes on. With OAC_PAUSE_COUNT set to a file
// name, every such point passed is appended to that file. A Pausepoint
// does not count towards OAC_CRASH_AT, so the crash points keep their
// numbers.
var (
	pauseAt    = envInt("OAC_PAUSE_AT")
	pauseDir   = os.Getenv("OAC_PAUSE_DIR")
	pauseCount = os.Getenv("OAC_PAUSE_COUNT")
	paused     atomic.Int64
)

// Pausepoint marks a point between two decisions of a command where the
// interleaving tests may pause it (see pause).
func Pausepoint(name string) { pause(name) }

func pause(name string) {
	n := paused.Add(1)
	if pauseCount != "" {
		if f, err := os.OpenFile(pauseCount, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			f.WriteString(name + "\n")
			f.Close()
		}
	}
	if pauseAt <= 0 || n != pauseAt || pauseDir == "" {
		return
	}
	if err := os.WriteFile(filepath.Join(pauseDir, "paused"), []byte(name+"\n"), 0o644); err != nil {
		return
	}
	for {
		if _, err := os.Stat(filepath.Join(pauseDir, "release")); err == nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
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
