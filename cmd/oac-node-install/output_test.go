package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/steps/host/privsep"
)

// openPTY opens a pseudo-terminal through /dev/ptmx: the master, whose
// reads return what was written to the slave, and the slave, a terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal slave: %v", err)
	}
	return m, s
}

// captured runs write with w, then closes w and returns what its reader
// end r got; the terminal's newline translation (\n to \r\n) is undone.
func captured(t *testing.T, r, w *os.File, write func(w *os.File)) string {
	t.Helper()
	done := make(chan []byte)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, r) // a master reads EIO once the slave is closed
		done <- b.Bytes()
	}()
	write(w)
	w.Close()
	return strings.ReplaceAll(string(<-done), "\r\n", "\n")
}

func colourEnv(t *testing.T, noColor, term string) {
	t.Setenv("NO_COLOR", noColor)
	t.Setenv("TERM", term)
}

// downloads is a phase, a large download whose progress a root line
// interrupts, a service-account line, and a small download.
func downloads(o *output) {
	o.event(privsep.Event{Kind: privsep.EventPhase, Text: "Download and verify node files"})
	const big = 100 << 20
	for _, d := range []int64{0, 5 << 20, 10 << 20, 37 << 20} {
		o.event(privsep.Event{Kind: privsep.EventTransfer, Text: "images/runtime.tar.gz", Done: d, Total: big})
	}
	fmt.Fprintln(o, "a line of root's")
	for _, d := range []int64{50 << 20, 99 << 20, big} {
		o.event(privsep.Event{Kind: privsep.EventTransfer, Text: "images/runtime.tar.gz", Done: d, Total: big})
	}
	o.event(privsep.Event{Kind: privsep.EventLine, Text: "download native/bin/\x1b[2Joac-node"})
	for _, d := range []int64{0, 6 << 20, 12 << 20} {
		o.event(privsep.Event{Kind: privsep.EventTransfer, Text: "native/bin/oac-node", Done: d, Total: 12 << 20})
	}
}

// On a terminal, a download's progress is one line rewritten in place, and
// any other line first ends it; the phase is cyan.
func TestOutputProgressOnATerminal(t *testing.T) {
	colourEnv(t, "", "xterm")
	m, s := openPTY(t)
	got := captured(t, m, s, func(w *os.File) { downloads(frozen(newOutput(w))) })
	want := "\n\x1b[36m==> Download and verify node files...\x1b[0m\n" +
		"\r  images/runtime.tar.gz: 0% of 100.0 MiB\r  images/runtime.tar.gz: 5% of 100.0 MiB" +
		"\r  images/runtime.tar.gz: 10% of 100.0 MiB\r  images/runtime.tar.gz: 37% of 100.0 MiB\n" +
		"a line of root's\n" +
		"\r  images/runtime.tar.gz: 50% of 100.0 MiB\r  images/runtime.tar.gz: 99% of 100.0 MiB" +
		"\r  images/runtime.tar.gz: 100% of 100.0 MiB\n" +
		"download native/bin/?[2Joac-node\n" +
		"\r  native/bin/oac-node: 0% of 12.0 MiB\r  native/bin/oac-node: 50% of 12.0 MiB\r  native/bin/oac-node: 100% of 12.0 MiB\n"
	if got != want {
		t.Fatalf("terminal got\n%q\nwant\n%q", got, want)
	}

	// A download that stopped short: its line ends before the failure is
	// printed on stderr, and so does it before a line the child printed
	// there.
	m, s = openPTY(t)
	got = captured(t, m, s, func(w *os.File) {
		o := frozen(newOutput(w))
		o.transfer("images/runtime.tar.gz", 40<<20, 100<<20)
		fmt.Fprintln(o.beside(w), "warning of the child")
		o.transfer("images/runtime.tar.gz", 50<<20, 100<<20)
		o.finish()
		o.finish()
	})
	want = "\r  images/runtime.tar.gz: 40% of 100.0 MiB\nwarning of the child\n\r  images/runtime.tar.gz: 50% of 100.0 MiB\n"
	if got != want {
		t.Fatalf("stopped short: got %q, want %q", got, want)
	}
}

// frozen stops o's clock: no progress line shows a rate.
func frozen(o *output) *output {
	at := time.Now()
	o.now = func() time.Time { return at }
	return o
}

// On a terminal, a download's progress line shows its rate from its first
// second on, and the time left until it is complete, measured from the
// bytes the file held when its progress was first shown (a resumed
// download's kept bytes are not counted as transferred).
func TestOutputProgressRateOnATerminal(t *testing.T) {
	colourEnv(t, "", "xterm")
	m, s := openPTY(t)
	got := captured(t, m, s, func(w *os.File) {
		o := newOutput(w)
		at := time.Unix(1000, 0)
		o.now = func() time.Time { return at }
		o.transfer("images/runtime.tar.gz", 20<<20, 100<<20) // resumed with 20 MiB kept
		at = at.Add(500 * time.Millisecond)
		o.transfer("images/runtime.tar.gz", 25<<20, 100<<20)
		at = at.Add(1500 * time.Millisecond)
		o.transfer("images/runtime.tar.gz", 40<<20, 100<<20) // 20 MiB in 2 s
		at = at.Add(6 * time.Second)
		o.transfer("images/runtime.tar.gz", 100<<20, 100<<20)
	})
	want := "\r  images/runtime.tar.gz: 20% of 100.0 MiB" +
		"\r  images/runtime.tar.gz: 25% of 100.0 MiB" +
		"\r  images/runtime.tar.gz: 40% of 100.0 MiB, 10.0 MiB/s, 6s left" +
		"\r  images/runtime.tar.gz: 100% of 100.0 MiB, 10.0 MiB/s        \n" // blanks over the longer line
	if got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}

// Redirected, progress is plain lines: 10% steps for a file of 50 MiB or
// more, one line for a smaller one; no colour, no carriage return.
func TestOutputProgressRedirected(t *testing.T) {
	colourEnv(t, "", "xterm")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := captured(t, r, w, func(w *os.File) { downloads(newOutput(w)) })
	want := "\n==> Download and verify node files...\n" +
		"  images/runtime.tar.gz: 10% of 100.0 MiB\n  images/runtime.tar.gz: 30% of 100.0 MiB\n" +
		"a line of root's\n" +
		"  images/runtime.tar.gz: 50% of 100.0 MiB\n  images/runtime.tar.gz: 90% of 100.0 MiB\n  images/runtime.tar.gz: 100% of 100.0 MiB\n" +
		"download native/bin/?[2Joac-node\n" +
		"  native/bin/oac-node: 100% of 12.0 MiB\n"
	if got != want {
		t.Fatalf("pipe got\n%q\nwant\n%q", got, want)
	}
}

// Colour needs a terminal, NO_COLOR empty (any value refuses it) and a TERM
// other than dumb; the failure prefix is red, the summary's title green and
// bold, its headings bold.
func TestOutputColourRules(t *testing.T) {
	for _, tc := range []struct {
		noColor, term string
		colour        bool
	}{
		{"", "xterm", true},
		{"1", "xterm", false},
		{"0", "xterm", false},
		{"", "dumb", false},
	} {
		t.Run(fmt.Sprintf("NO_COLOR=%q TERM=%s", tc.noColor, tc.term), func(t *testing.T) {
			colourEnv(t, tc.noColor, tc.term)
			m, s := openPTY(t)
			var st struct{ title, heading string }
			got := captured(t, m, s, func(w *os.File) {
				o := newOutput(w)
				o.phase("Check host requirements")
				style := o.summaryStyle()
				if style.Title != nil {
					st.title, st.heading = style.Title("Node installation complete."), style.Heading("Status")
				}
				c := &cli{stdin: unreadable{t}, stdout: io.Discard, stderr: w}
				if code := c.run([]string{"check"}); code != exitFailure {
					t.Errorf("exit %d", code)
				}
			})
			if !tc.colour {
				if strings.Contains(got, "\x1b") || st.title != "" {
					t.Fatalf("colour without a colour terminal: %q %q", got, st.title)
				}
				return
			}
			for _, want := range []string{"\x1b[36m==> Check host requirements...\x1b[0m\n", "\x1b[31mcheck: \x1b[0m--installation-id is required\n"} {
				if !strings.Contains(got, want) {
					t.Errorf("terminal output %q lacks %q", got, want)
				}
			}
			if st.title != "\x1b[32m\x1b[1mNode installation complete.\x1b[0m" || st.heading != "\x1b[1mStatus\x1b[0m" {
				t.Errorf("summary style %q %q", st.title, st.heading)
			}
		})
	}
}

// --no-color turns colour off even for a command line that does not parse.
func TestNoColorFlagOnARefusedCommandLine(t *testing.T) {
	colourEnv(t, "", "xterm")
	os.Unsetenv("NO_COLOR")
	for _, args := range [][]string{{"check", "--no-color"}, {"check", "--no-color", "--bogus"}, {"--no-color", "--installation-id", "x"}} {
		m, s := openPTY(t)
		got := captured(t, m, s, func(w *os.File) {
			c := &cli{stdin: unreadable{t}, stdout: io.Discard, stderr: w}
			c.run(args)
		})
		if strings.Contains(got, "\x1b") || !strings.Contains(got, "failed: ") && !strings.Contains(got, "check: ") {
			t.Errorf("%q: %q", args, got)
		}
		os.Unsetenv("NO_COLOR")
	}
}
