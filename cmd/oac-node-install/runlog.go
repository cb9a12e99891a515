package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// The record of every install, rerun and uninstall run: what the run
// printed, on stdout and stderr, goes line by line to the systemd journal
// under its own identifier while the run prints it (`journalctl -t
// oac-node-install`), so that support reads what the operator saw instead
// of asking for a pasted terminal; and when the run ends, the whole output
// is kept in root's journal directory, the newest keptRuns runs, so that a
// host without journald keeps it too. A refusal that changed nothing adds
// no file (it would be a change); its lines still reach the journal.
//
// What is recorded is what the terminal showed, sanitized the same way: no
// terminal controls (colours, the progress line's carriage returns: only
// the line as it was left is kept), one line per line. The enrollment
// token is never printed, and a run that read one also replaces it
// wherever it would appear, so that no mistake upstream can put it in a
// log.

const (
	// runLogIdentifier is the journal's SYSLOG_IDENTIFIER of every line.
	runLogIdentifier = "oac-node-install"
	// runsDir is the directory of kept runs in root's journal directory.
	runsDir = "runs"
	// keptRuns is how many runs' output is kept.
	keptRuns = 10
	// maxRunLog bounds one run's kept output; later lines reach the
	// journal only.
	maxRunLog = 4 << 20
	// redacted replaces a secret in a recorded line.
	redacted = "[redacted]"
)

// runsPath is where the last runs' output is kept.
func runsPath(h layout.Host) string { return filepath.Join(h.JournalsRoot(), runsDir) }

// runLog records one run's output. It is safe for concurrent use.
type runLog struct {
	mu sync.Mutex
	// active is set once the run is one that is recorded (install or
	// uninstall as root); lines printed before are kept and sent then.
	active bool
	action string
	id     string
	start  time.Time
	// send writes one line to the journal; nil when journald does not run
	// (or the host is a test's directory).
	send    func(line string, stderr bool) error
	sendErr error
	// partial holds each stream's unfinished line.
	partial [2][]byte
	lines   []recordedLine
	size    int
	cut     bool
	secrets []string
}

func newRunLog() *runLog { return &runLog{start: time.Now()} }

// recordedLine is one line as recorded, with its stream.
type recordedLine struct {
	text   string
	stderr bool
}

// journalSender is the journal when journald runs: each line a message
// with the run's fields.
func journalSender(action, id string, start time.Time) func(string, bool) error {
	if !journal.Enabled() {
		return nil
	}
	vars := map[string]string{
		"SYSLOG_IDENTIFIER": runLogIdentifier,
		"OAC_ACTION":        action,
		"OAC_RUN":           fmt.Sprintf("%s-%d", start.UTC().Format("20060102T150405Z"), os.Getpid()),
	}
	if id != "" {
		vars["OAC_INSTALLATION_ID"] = id
	}
	return func(line string, stderr bool) error {
		pri := journal.PriInfo
		if stderr {
			pri = journal.PriNotice
		}
		return journal.Send(line, pri, vars)
	}
}

// activate starts recording: the run is action (install, uninstall) of
// the installation id ("" when not named), sent with send.
func (r *runLog) activate(action, id string, send func(string, bool) error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active {
		return
	}
	r.active, r.action, r.id, r.send = true, action, id, send
	if r.send != nil {
		for _, l := range r.lines {
			if l.text != "" {
				r.sendLine(l.text, l.stderr)
			}
		}
	}
}

// secret makes the recorder replace s wherever it would appear.
func (r *runLog) secret(s string) {
	if r == nil || len(s) < 4 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets = append(r.secrets, s)
}

// writer is a Writer to w that records what is written to it as stream
// (0 stdout, 1 stderr).
func (r *runLog) writer(w io.Writer, stream int) io.Writer {
	return &recordingWriter{w: w, r: r, stream: stream}
}

// write records p of stream.
func (r *runLog) write(p []byte, stream int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	buf := append(r.partial[stream], p...)
	for {
		i := slices.Index(buf, '\n')
		if i < 0 {
			break
		}
		r.add(string(buf[:i]), stream == 1)
		buf = buf[i+1:]
	}
	// A line rewritten in place (a terminal's progress) is kept as it
	// now reads.
	if i := slices.Index(buf, '\r'); i >= 0 {
		if j := strings.LastIndexByte(strings.TrimRight(string(buf), "\r"), '\r'); j >= 0 {
			buf = buf[j:]
		}
	}
	// An unfinished line longer than any line the run prints is kept
	// whole in pieces, not grown without bound.
	if len(buf) > 64<<10 {
		r.add(string(buf), stream == 1)
		buf = nil
	}
	r.partial[stream] = slices.Clone(buf)
}

// flush records each stream's unfinished line.
func (r *runLog) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.partial {
		if len(r.partial[s]) > 0 {
			r.add(string(r.partial[s]), s == 1)
			r.partial[s] = nil
		}
	}
}

// add records one line as the terminal left it. The caller holds mu.
func (r *runLog) add(raw string, stderr bool) {
	line := r.clean(raw)
	// A blank line separates phases on the terminal; in the journal it
	// would be an empty message.
	if r.active && r.send != nil && line != "" {
		r.sendLine(line, stderr)
	}
	if r.size+len(line)+1 > maxRunLog {
		if !r.cut {
			r.cut = true
			r.lines = append(r.lines, recordedLine{text: fmt.Sprintf("(output cut after %d bytes: the rest is in the journal only)", maxRunLog)})
		}
		return
	}
	r.size += len(line) + 1
	r.lines = append(r.lines, recordedLine{line, stderr})
}

// sendLine sends one line; the first failure ends sending (the run is not
// failed for its record). The caller holds mu.
func (r *runLog) sendLine(line string, stderr bool) {
	if r.sendErr != nil {
		return
	}
	r.sendErr = r.send(line, stderr)
}

// clean is raw as a terminal would have left it: only the text after its
// last carriage return (a rewritten progress line), no escape sequences,
// no controls, the secrets replaced.
func (r *runLog) clean(raw string) string {
	if i := strings.LastIndexByte(strings.TrimRight(raw, "\r"), '\r'); i >= 0 {
		raw = raw[i+1:]
	}
	raw = strings.TrimRight(stripEscapes(raw), " \r")
	for _, s := range r.secrets {
		raw = strings.ReplaceAll(raw, s, redacted)
	}
	line := privsep.SanitizeString(raw)
	for _, s := range r.secrets {
		line = strings.ReplaceAll(line, s, redacted)
	}
	return line
}

// stripEscapes removes ANSI escape sequences (CSI: ESC [ ... final byte;
// OSC: ESC ] ... BEL or ESC \; and two-byte ESC sequences).
func stripEscapes(s string) string {
	if !strings.ContainsRune(s, 0x1b) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != 0x1b {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		if i+1 < len(s) && s[i+1] == ']' {
			j := i + 2
			for j < len(s) && s[j] != '\a' && !(s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\') {
				j++
			}
			if j < len(s) && s[j] == 0x1b {
				j++
			}
			i = j
			continue
		}
		i++
	}
	return b.String()
}

// keep writes the run's output to dir (a new file, the run's start, action
// and installation in its name) and removes all but the newest keptRuns
// files there. A run that changed nothing (err a refusal) keeps no file.
func (r *runLog) keep(dir string, err error, code int) (string, error) {
	if r == nil {
		return "", nil
	}
	r.flush()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.active || (err != nil && nothingChanged(err)) {
		return "", nil
	}
	if err := safefile.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	name := r.start.UTC().Format("20060102T150405.000Z") + "-" + r.action
	if r.id != "" {
		name += "-" + r.id
	}
	name += ".log"
	var b strings.Builder
	fmt.Fprintf(&b, "# oac-node-install %s, %s, started %s, exit %d\n", r.action, releaseVersion(), r.start.UTC().Format(time.RFC3339), code)
	for _, l := range r.lines {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	p := filepath.Join(dir, name)
	if err := safefile.AtomicWrite(p, []byte(b.String()), 0o600); err != nil {
		return "", err
	}
	return p, pruneRuns(dir, keptRuns)
}

// nothingChanged reports whether err is a refusal that changed nothing
// (the command line's own refusals included).
func nothingChanged(err error) bool {
	var ue *usageError
	return errors.As(err, &ue) || workflow.NothingChanged(err)
}

// pruneRuns removes all but the newest keep run files in dir (their names
// begin with the run's start, so that the newest sort last).
func pruneRuns(dir string, keep int) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var runs []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".log") {
			runs = append(runs, e.Name())
		}
	}
	slices.Sort(runs)
	var errs []error
	for len(runs) > keep {
		if err := os.Remove(filepath.Join(dir, runs[0])); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		runs = runs[1:]
	}
	return errors.Join(errs...)
}

// recordingWriter writes to w and records what it wrote. It keeps w's
// descriptor visible (Fd), so that whether the output is a terminal is
// decided on the real stream.
type recordingWriter struct {
	w      io.Writer
	r      *runLog
	stream int
}

func (rw *recordingWriter) Write(p []byte) (int, error) {
	n, err := rw.w.Write(p)
	rw.r.write(p[:n], rw.stream)
	return n, err
}

// Fd is the descriptor of the stream written to, or an invalid one when
// it is not a file.
func (rw *recordingWriter) Fd() uintptr {
	if f, ok := rw.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}

// runLogLine is status's one line naming where the runs are recorded.
func runLogLine(h layout.Host) string {
	return fmt.Sprintf("Every install and uninstall run's output: journalctl -t %s, and the last %d runs in %s.", runLogIdentifier, keptRuns, runsPath(h))
}
