// Command oac-demo runs the main job, a full node installation against the
// bundled development console, and removes it again (make demo, make
// demo-uninstall):
//
//	oac-demo up   [--state DIR] [--bin DIR]
//	oac-demo down [--state DIR] [--bin DIR]
//
// up starts oac-devcore (the console and Core stand-in) in a session of
// its own, boots a detached test host (steps/testsupport/testhost: a real systemd as
// PID 1 of private namespaces with private /etc, /var/lib and /run and the
// machine's Docker Engine), creates an enrollment token, generates the
// bootstrap command the way Web does (oac-node-install command) and pipes
// it into bash inside the test host, as an operator pastes it: the token
// is only on the shell's standard input. It prints the installer's output,
// a rerun of the registered node and status, and leaves the console and
// the test host running.
//
// down removes the node in Core, uninstalls it in the test host, prints
// the uninstall's output and status, then ends the test host and the
// console, removes the Docker network and the Runtime image the demo
// brought, and checks that the machine's account databases,
// /etc/systemd/system and /etc/oac-node are as they were before up. It
// cleans up after a partial or interrupted up as well, and does nothing,
// successfully, when nothing is up.
//
// Everything lives in the state directory (default /tmp/oac-demo): the
// record of what was started (state.json), the console's data and log, the
// operator's home inside the test host and the test host's directory. The
// binaries (oac-node-install, oac-devcore, oac-node-dev) are taken from
// --bin, by default the directory of this program (make build puts them
// all in bin/); oac-demo builds nothing. It needs root, systemd (not as
// PID 1), unshare, nsenter, curl and a Docker Engine with its docker CLI.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// DefaultState is the state directory.
const DefaultState = "/tmp/oac-demo"

const usage = `usage: oac-demo up|down [--state DIR] [--bin DIR]
  up     start oac-devcore and a test host, install a node there with the
         command Web generates, print its output, a rerun and status
  down   uninstall the node, end the test host and oac-devcore, and check
         that the machine is as before up (also after a partial up)`

// options are the flags common to up and down.
type options struct {
	state string // the state directory
	bin   string // the directory with the binaries
}

func main() {
	// Ctrl-C ends the current stage, which then stops up; the console and
	// the test host run in sessions of their own and are not signalled.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "up" && args[0] != "down") {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("oac-demo "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.state, "state", DefaultState, "state directory (what up started, the console's data, the test host)")
	fs.StringVar(&o.bin, "bin", "", "directory with oac-node-install, oac-devcore and oac-node-dev (default: this program's)")
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	if o.bin == "" {
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "oac-demo: %v\n", err)
			return 1
		}
		o.bin = filepath.Dir(self)
	}
	var err error
	if o.state, err = filepath.Abs(o.state); err == nil {
		o.bin, err = filepath.Abs(o.bin)
	}
	if err != nil {
		fmt.Fprintf(stderr, "oac-demo: %v\n", err)
		return 1
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "oac-demo: needs root (a private systemd, accounts and units in the test host)")
		return 1
	}
	d := &demo{options: o, out: stdout, errOut: stderr}
	if args[0] == "up" {
		return d.up(ctx)
	}
	return d.down()
}

// demo is one run of up or down.
type demo struct {
	options
	out, errOut io.Writer
}

// step prints the heading of a stage.
func (d *demo) step(format string, args ...any) {
	fmt.Fprintf(d.out, "\n==> oac-demo: "+format+"\n", args...)
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, "    "+format+"\n", args...)
}

func (d *demo) fail(format string, args ...any) {
	fmt.Fprintf(d.errOut, "oac-demo: "+format+"\n", args...)
}

func (d *demo) binary(name string) string { return filepath.Join(d.bin, name) }

// downCommand is the command that removes this demo: make
// demo-uninstall for the default state directory; with another --state,
// oac-demo down naming it (make demo-uninstall would tear down the default
// demo instead).
func (d *demo) downCommand() string {
	if d.state == DefaultState {
		return "make demo-uninstall"
	}
	return shellWord(d.binary("oac-demo")) + " down --state " + shellWord(d.state)
}

// shellWord is s as one word for a POSIX shell: as it is when it holds
// only characters no shell treats specially, else in single quotes.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:+,=@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
