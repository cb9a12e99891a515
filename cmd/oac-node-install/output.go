package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/install"
)

// field is how status and leases print any value they did not compose
// themselves — paths, workflow and step names, error texts, notes, hints,
// a holder's command: what the service account wrote, or chose, reaches the
// terminal with its controls replaced and its line breaks shown as \n, so
// that it can neither drive the terminal nor print a line of its own.
func field(s string) string { return privsep.SanitizeField(s) }

// The terminal styles the commands use.
const (
	styleCyan  = "\x1b[36m"
	styleRed   = "\x1b[31m"
	styleGreen = "\x1b[32m"
	styleGold  = "\x1b[33m"
	styleBold  = "\x1b[1m"
	styleReset = "\x1b[0m"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	// A file, or a writer that records what is written to one (runlog.go).
	f, ok := w.(interface{ Fd() uintptr })
	if !ok || f.Fd() == ^uintptr(0) {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// noColor reports whether the environment refuses colour: NO_COLOR set to
// any non-empty value (--no-color sets it) or TERM=dumb.
func noColor() bool { return os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" }

// noColorFlag reports whether args ask for --no-color, for a command line
// that failed before its flags were applied (or did not parse).
func noColorFlag(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--" + flagNoColor, "--" + flagNoColor + "=true":
			return true
		}
	}
	return false
}

// colorFor reports whether what is written to w may be coloured: w is a
// terminal and the environment does not refuse colour.
func colorFor(w io.Writer) bool { return !noColor() && isTerminal(w) }

// paint wraps s in style when color is on.
func paint(color bool, style, s string) string {
	if !color || s == "" {
		return s
	}
	return style + s + styleReset
}

// output is the operator's view of a run on stdout (CONTRACT §6.3): each
// phase once as a blank line and "==> label...", the service account's
// lines, and downloads' progress. On a terminal a download's progress is
// one line rewritten in place; otherwise it is plain lines: 10% steps for
// files of download.ProgressThreshold bytes or more, one line for smaller
// ones. Everything the service account sent was sanitized by privsep;
// what is printed here is sanitized again as a field, so that it can
// neither drive the terminal nor start a line of its own. output is a
// Writer too, for the lines root's steps print, so that they never land on
// an unfinished progress line. It is safe for concurrent use.
type output struct {
	mu    sync.Mutex
	w     io.Writer
	color bool
	tty   bool
	last  string
	// open is the width of the progress line on the terminal that has no
	// newline yet; 0 when there is none.
	open  int
	steps map[string]func(done, total int64)
	// rates holds, per file on the terminal, when its progress was first
	// shown and how much it held then (a resumed download starts with its
	// kept bytes); now is the clock.
	rates map[string]rateStart
	now   func() time.Time
}

// rateStart is where a file's transfer rate is measured from.
type rateStart struct {
	at   time.Time
	done int64
}

func newOutput(w io.Writer) *output {
	return &output{w: w, tty: isTerminal(w), color: colorFor(w), steps: map[string]func(done, total int64){},
		rates: map[string]rateStart{}, now: time.Now}
}

// endLine finishes an open progress line. The caller holds mu.
func (o *output) endLine() {
	if o.open > 0 {
		io.WriteString(o.w, "\n")
		o.open = 0
	}
}

// finish ends an open progress line (a download that stopped short), so
// that what the command prints next starts a line of its own.
func (o *output) finish() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.endLine()
}

// Write prints p (whole lines of root's own output).
func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.endLine()
	return o.w.Write(p)
}

// beside returns a Writer to w (stderr) that first finishes an open
// progress line, so that a message never continues it on the terminal.
func (o *output) beside(w io.Writer) io.Writer { return besideWriter{o, w} }

type besideWriter struct {
	o *output
	w io.Writer
}

func (b besideWriter) Write(p []byte) (int, error) {
	b.o.mu.Lock()
	defer b.o.mu.Unlock()
	b.o.endLine()
	return b.w.Write(p)
}

// phase prints a phase once (a repeated label is not printed again).
func (o *output) phase(label string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	label = field(label)
	if label == o.last {
		return
	}
	o.last = label
	o.endLine()
	fmt.Fprintf(o.w, "\n%s\n", paint(o.color, styleCyan, "==> "+label+"..."))
}

// line prints one line the service account sent.
func (o *output) line(text string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.endLine()
	fmt.Fprintln(o.w, field(text))
}

// event renders one of the service-account child's events.
func (o *output) event(e privsep.Event) {
	switch e.Kind {
	case privsep.EventPhase:
		o.phase(e.Text)
	case privsep.EventTransfer:
		o.transfer(e.Text, e.Done, e.Total)
	default:
		o.line(e.Text)
	}
}

// transfer shows that done of total bytes of the file name are held.
func (o *output) transfer(name string, done, total int64) {
	if total <= 0 || done < 0 || done > total {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	name = field(name)
	text := fmt.Sprintf("  %s: %d%% of %s", name, done*100/total, mib(total))
	if o.tty {
		text += o.rate(name, done, total)
		pad := ""
		if n := len(text); n < o.open {
			pad = strings.Repeat(" ", o.open-n)
		}
		fmt.Fprintf(o.w, "\r%s%s", text, pad)
		o.open = max(len(text), 1)
		if done == total {
			o.endLine()
		}
		return
	}
	if total < download.ProgressThreshold {
		if done == total {
			fmt.Fprintln(o.w, text)
		}
		return
	}
	step := o.steps[name]
	if step == nil {
		step = download.TenPercentSteps(total, func(pct int) { fmt.Fprintf(o.w, "  %s: %d%% of %s\n", name, pct, mib(total)) })
		o.steps[name] = step
	}
	step(done, total)
}

// rate is what a terminal's progress line adds to the percentage, as
// docker pull does: the rate since the file's first progress and, until it
// is complete, the time left at that rate ("", for the first second).
func (o *output) rate(name string, done, total int64) string {
	now := o.now()
	r, ok := o.rates[name]
	if !ok {
		o.rates[name] = rateStart{at: now, done: done}
		return ""
	}
	elapsed := now.Sub(r.at)
	if elapsed < time.Second || done <= r.done {
		return ""
	}
	perSecond := float64(done-r.done) / elapsed.Seconds()
	text := ", " + mib(int64(perSecond)) + "/s"
	if left := time.Duration(float64(total-done) / perSecond * float64(time.Second)); done < total && left >= time.Second {
		text += ", " + left.Round(time.Second).String() + " left"
	}
	return text
}

// mib is a size for the operator.
func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// heading prints a heading of its own (check's).
func (o *output) heading(text string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.endLine()
	fmt.Fprintf(o.w, "%s\n\n", paint(o.color, styleBold, text))
}

// check prints one check's result: ok green, FAIL red, skipped yellow.
func (o *output) check(ch install.Check) {
	result, text := checkText(ch)
	style := styleGreen
	switch result {
	case "FAIL":
		style = styleRed + styleBold
	case "skipped", "warning":
		style = styleGold
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.endLine()
	fmt.Fprintf(o.w, "%s %s\n", paint(o.color, style, fmt.Sprintf("%-7s", result)), text)
}

// summaryStyle is install's summary in colour on a terminal: the title
// green and bold, the headings bold.
func (o *output) summaryStyle() install.SummaryStyle {
	if !o.color {
		return install.SummaryStyle{}
	}
	return install.SummaryStyle{
		Title:   func(s string) string { return paint(true, styleGreen+styleBold, s) },
		Heading: func(s string) string { return paint(true, styleBold, s) },
	}
}
