package main

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestColourChild is status or leases (OAC_COLOUR_COMMAND) on a status
// test host, with the arguments of OAC_COLOUR_ARGS, for
// TestStatusAndLeasesColour: its standard streams are what the parent
// gave it, a terminal or a pipe.
func TestColourChild(t *testing.T) {
	command := os.Getenv("OAC_COLOUR_COMMAND")
	if command == "" {
		t.Skip("runs only as the colour tests' child process")
	}
	c := &cli{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	if command == "leases" {
		c.hostRoot, _ = fakeHost(t) // generation 1 ok, generation 2 stuck
	} else {
		c.hostRoot = newStatusHost(t).root
	}
	args := append([]string{command}, strings.Fields(os.Getenv("OAC_COLOUR_ARGS"))...)
	os.Exit(c.run(args))
}

// TestStatusAndLeasesColour: on a terminal, status and leases colour the
// conditions and states (and their headings); with NO_COLOR set, with
// --no-color, with TERM=dumb, or written to a pipe, they print no escape
// sequence at all, and the words are the same either way.
func TestStatusAndLeasesColour(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: status and leases read the node root as another account")
	}
	for _, command := range []string{"status", "leases"} {
		for _, tc := range []struct {
			name  string
			tty   bool
			env   []string
			args  string
			color bool
		}{
			{"a terminal", true, nil, "", true},
			{"a terminal with NO_COLOR", true, []string{"NO_COLOR=1"}, "", false},
			{"a terminal with --no-color", true, nil, "--no-color", false},
			{"a dumb terminal", true, []string{"TERM=dumb"}, "", false},
			{"a pipe", false, nil, "", false},
		} {
			t.Run(command+" on "+tc.name, func(t *testing.T) {
				out := runColourChild(t, command, tc.tty, tc.env, tc.args)
				hasEscape := strings.ContainsRune(out, 0x1b)
				if hasEscape != tc.color {
					t.Fatalf("escape sequences %v, want %v:\n%q", hasEscape, tc.color, out)
				}
				plain := stripEscapes(out)
				want := []string{"installation " + testID + ": ", "  install: complete",
					"\nEvery install and uninstall run's output: journalctl -t oac-node-install, and the last 10 runs in "}
				if command == "leases" {
					want = []string{"  node " + testID + " (", "      lease:    ok", "      lease:    identity-missing", "      next:     "}
				}
				for _, w := range want {
					if !strings.Contains(plain, w) {
						t.Errorf("the output lacks %q:\n%s", w, plain)
					}
				}
				if tc.color {
					styled := []string{styleBold + "installation " + testID + styleReset, styleGreen + "complete" + styleReset}
					if command == "leases" {
						styled = []string{styleBold + "node " + testID + styleReset, styleGreen + "ok" + styleReset,
							styleRed + styleBold + "identity-missing" + styleReset, styleGold + styleBold + "next:" + styleReset}
					}
					for _, s := range styled {
						if !strings.Contains(out, s) {
							t.Errorf("the terminal output does not show %q:\n%q", s, out)
						}
					}
				}
			})
		}
	}
}

// runColourChild runs TestColourChild for command with its output on a
// terminal (tty) or a pipe and returns what it printed.
func runColourChild(t *testing.T, command string, tty bool, env []string, args string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestColourChild$", "-test.count=1")
	base := slices.DeleteFunc(os.Environ(), func(e string) bool {
		return strings.HasPrefix(e, "NO_COLOR=") || strings.HasPrefix(e, "TERM=")
	})
	cmd.Env = append(append(base, "OAC_COLOUR_COMMAND="+command, "OAC_COLOUR_ARGS="+args, "TERM=xterm"), env...)
	if !tty {
		out, _ := cmd.Output()
		return string(out)
	}
	master, slave := openPTY(t)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var screen timedBuffer
	done := make(chan struct{})
	go func() { screen.copyFrom(master); close(done) }()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%s did not end:\n%q", command, screen.String())
	}
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	return screen.settled()
}
