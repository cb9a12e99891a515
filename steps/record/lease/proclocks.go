package lease

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Holder is a process holding (or waiting for) a lease lock.
type Holder struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	UID     int    `json:"uid"`  // real uid, -1 when unknown
	Mode    string `json:"mode"` // "shared" or "exclusive"
	// Waiting is true for a process blocked waiting for the lock.
	Waiting bool `json:"waiting,omitempty"`
	// Source says how the holder was found: "descriptor" — the process
	// holds a descriptor of the locked open file (read from
	// /proc/<pid>/fdinfo); "proc-locks" — the PID /proc/locks records as
	// the locker (the process that took the lock, which may have handed
	// the descriptor to a helper and exited).
	Source string `json:"source"`
}

// Holder modes.
const (
	ModeShared    = "shared"
	ModeExclusive = "exclusive"
)

// lockKey is a file as /proc/locks prints it: "MAJ:MIN:INODE" with major
// and minor in hex (%02x).
func lockKey(dev, ino uint64) string {
	return fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), ino)
}

// lockLine is one entry of /proc/locks.
type lockLine struct {
	kind    string // FLOCK, POSIX, OFDLCK, ...
	mode    string
	pid     int
	waiting bool
}

// readProcLocks reads /proc/locks once and returns the entries of the files
// in want (keys as lockKey), in file order.
func readProcLocks(path string, want map[string]bool) (map[string][]lockLine, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return parseProcLocks(data, want), nil
}

func parseProcLocks(data []byte, want map[string]bool) map[string][]lockLine {
	out := map[string][]lockLine{}
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		f := strings.Fields(string(line))
		// "1: FLOCK  ADVISORY  WRITE 1435 fe:00:762101 0 EOF", or with "->"
		// after the number for a blocked waiter.
		if len(f) < 6 {
			continue
		}
		waiting := f[1] == "->"
		if waiting {
			f = f[1:]
		}
		if len(f) < 6 || !want[f[5]] {
			continue
		}
		pid, _ := strconv.Atoi(f[4])
		mode := ModeShared
		if f[3] == "WRITE" {
			mode = ModeExclusive
		}
		out[f[5]] = append(out[f[5]], lockLine{kind: f[1], mode: mode, pid: pid, waiting: waiting})
	}
	return out
}

// descriptorHolders finds the processes that hold a descriptor of a locked
// lease: it scans /proc/<pid>/fd once for descriptors named like a lease,
// confirms the file by device and inode, and reads the descriptor's lock
// lines from /proc/<pid>/fdinfo. Processes it may not inspect are skipped
// (their locks are still reported from /proc/locks).
func descriptorHolders(proc string, locked map[string]bool) map[string][]Holder {
	out := map[string][]Holder{}
	procDir, err := os.Open(proc)
	if err != nil {
		return out
	}
	names, _ := procDir.Readdirnames(-1)
	procDir.Close()
	for _, p := range names {
		pid, err := strconv.Atoi(p)
		if err != nil {
			continue
		}
		fdDir := filepath.Join(proc, p, "fd")
		d, err := os.Open(fdDir)
		if err != nil {
			continue
		}
		fds, _ := d.Readdirnames(-1)
		d.Close()
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(fdDir, fd))
			if err != nil || !looksLikeLease(target) {
				continue
			}
			var st unix.Stat_t
			if unix.Stat(filepath.Join(fdDir, fd), &st) != nil {
				continue
			}
			key := lockKey(st.Dev, st.Ino)
			if !locked[key] {
				continue
			}
			info, err := os.ReadFile(filepath.Join(proc, p, "fdinfo", fd))
			if err != nil {
				continue
			}
			for _, l := range parseFdinfoLocks(info, key) {
				out[key] = appendHolder(out[key], Holder{PID: pid, Mode: l.mode, Source: "descriptor"})
			}
		}
	}
	return out
}

// looksLikeLease matches a descriptor target "<dir>/<g>.lease", also with
// the " (deleted)" suffix of a replaced lease.
func looksLikeLease(target string) bool {
	base := strings.TrimSuffix(filepath.Base(target), " (deleted)")
	g, ok := strings.CutSuffix(base, ".lease")
	return ok && parseGeneration(g) > 0
}

// parseFdinfoLocks returns the "lock:" lines of a descriptor's fdinfo that
// concern key; they list the locks owned by that open file description.
func parseFdinfoLocks(info []byte, key string) []lockLine {
	var out []lockLine
	for _, line := range strings.Split(string(info), "\n") {
		rest, ok := strings.CutPrefix(line, "lock:")
		if !ok {
			continue
		}
		for _, l := range parseProcLocks([]byte(strings.TrimSpace(rest)), map[string]bool{key: true}) {
			out = append(out, l...)
		}
	}
	return out
}

func appendHolder(hs []Holder, h Holder) []Holder {
	for _, x := range hs {
		if x.PID == h.PID && x.Mode == h.Mode && x.Waiting == h.Waiting {
			return hs
		}
	}
	return append(hs, h)
}

// describeProcess fills in a holder's command (argv[0] from cmdline, else
// comm) and real uid.
func describeProcess(proc string, h *Holder) {
	h.UID = -1
	if h.PID <= 0 {
		return
	}
	dir := filepath.Join(proc, strconv.Itoa(h.PID))
	if b, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil && len(b) > 0 {
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		h.Command = string(b)
	}
	if h.Command == "" {
		if b, err := os.ReadFile(filepath.Join(dir, "comm")); err == nil {
			h.Command = strings.TrimSpace(string(b))
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "status")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					if uid, err := strconv.Atoi(f[0]); err == nil {
						h.UID = uid
					}
				}
				break
			}
		}
	}
}

// holdersOf merges the descriptor holders of a lease with the /proc/locks
// entries: lockers not seen holding a descriptor (another account's
// processes, or a locker that handed the descriptor on) and waiters are
// added from /proc/locks.
func holdersOf(proc string, lines []lockLine, byFD []Holder) []Holder {
	hs := append([]Holder(nil), byFD...)
	for _, l := range lines {
		if !l.waiting && len(byFD) > 0 {
			continue
		}
		hs = appendHolder(hs, Holder{PID: l.pid, Mode: l.mode, Waiting: l.waiting, Source: "proc-locks"})
	}
	for i := range hs {
		describeProcess(proc, &hs[i])
	}
	return hs
}
