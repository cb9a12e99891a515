package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"
)

// cli is one run of the command line: its standard streams and, in test
// builds, the root of the host's paths.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// hostRoot is "" on a real host; test builds set it with --host-root.
	hostRoot string
	// mode is the root command's mode once its flags parsed and validated.
	mode *installerMode
	// args is the command line run runs.
	args []string
	// result, set by install and uninstall with --json, is the document
	// printed on stdout once the run ended (result.go).
	result *resultDocument
	// out, once install or uninstall prints progress, is that output, so
	// that the stopping message finishes its progress line first.
	out atomic.Pointer[output]
	// rec records what the run prints (runlog.go); install and uninstall
	// activate it.
	rec *runLog
}

// progress is where install and uninstall print for the operator: stdout,
// or stderr with --json, whose stdout holds only the result document.
func (c *cli) progress() io.Writer {
	if c.result != nil {
		return c.stderr
	}
	return c.stdout
}

// run executes the command line args and returns the exit code.
func (c *cli) run(args []string) int {
	ctx, stop := watchSignals(context.Background(), c.stopping)
	defer stop()
	c.args = args
	c.rec = newRunLog()
	c.stdout, c.stderr = c.rec.writer(c.stdout, 0), c.rec.writer(c.stderr, 1)
	root := c.rootCommand()
	completingUninstall(root, args)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	f := c.failureOf(root, cmd, args, err)
	f.prefix = paint(!noColorFlag(args) && colorFor(c.stderr), styleRed, f.prefix)
	code := f.report(c.stderr, err, interruption(ctx))
	if c.result != nil {
		c.result.end(err, code, f.failureMessage(err, interruption(ctx)))
		if werr := c.result.write(c.stdout); werr != nil && code == exitOK {
			fmt.Fprintf(c.stderr, "%s%v\n", f.prefix, werr)
			code = exitFailure
		}
	}
	if p, kerr := c.rec.keep(runsPath(c.host()), err, code); kerr != nil {
		fmt.Fprintf(c.stderr, "Warning: this run's output is not kept in %s: %v\n", runsPath(c.host()), kerr)
	} else if p != "" && c.rec.sendErr != nil {
		fmt.Fprintf(c.stderr, "Warning: this run's output did not reach the journal (%v); it is kept in %s\n", c.rec.sendErr, p)
	}
	return code
}

// record starts recording this run's output (an install or uninstall run
// as root): to the journal when journald runs on the real host, and to a
// file in root's journal directory when it ends.
func (c *cli) record(action, id string) {
	var send func(string, bool) error
	if c.hostRoot == "" {
		send = journalSender(action, id, c.rec.start)
	}
	c.rec.activate(action, id, send)
}

const rootLong = `oac-node-install turns this Linux host into a sandbox node for one OAC Core,
keeps the node's Runtime generations prepared, and removes the node again.

Without a command it installs a node: run the command Web generates, which
downloads this binary, checks its sha256 and runs it with the flags below.
An interrupted or failed run is rerun with the same command and continues
at the step it stopped at. With --uninstall (or the uninstall command) it
removes the node. Every refusal that changes nothing ends with "Nothing
was changed."

Exit codes: 0 success; 1 failure; 65 the generation helper could not
download or verify the Runtime artifacts; 130, 129 and 143 interrupted by
SIGINT, SIGHUP and SIGTERM outside a step run as the service account.`

const rootExample = `  # Install a node: the command Web generates (the token only on standard input)
  printf '%s\n' '<token>' | sudo ./oac-node-install --enrollment-token-stdin \
      --source-url https://console.example.com --core-url https://core.example.com \
      --provider docker --installation-id 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c

  # Check the host first: every check install runs, each result shown, nothing changed
  sudo ./oac-node-install check --source-url https://console.example.com \
      --core-url https://core.example.com --provider docker \
      --installation-id 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c

  # Rerun after an interruption or a fixed failure: the same command
  # (a node that is already registered needs no token)
  sudo ./oac-node-install --source-url https://console.example.com \
      --core-url https://core.example.com --provider docker \
      --installation-id 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c

  # Remove the node (--force when Core cannot confirm it no longer lists it);
  # the uninstall command is the same: oac-node-install uninstall --installation-id ...
  sudo ./oac-node-install --uninstall --installation-id 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c

  # The state of every installation on this host; exit 2 when one needs attention
  sudo ./oac-node-install status

  # Who holds each Runtime generation's lease, and what to run when one is stuck
  sudo ./oac-node-install leases --installation-id 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c`

// rootCommand is the whole command tree. The root command takes the
// original installer's flags (CONTRACT §4.4) and installs, uninstalls or runs
// the generation helper; status, leases, command, version and completion are
// subcommands, and cobra adds help.
func (c *cli) rootCommand() *cobra.Command {
	f := &installerFlags{}
	root := &cobra.Command{
		Use:           "oac-node-install",
		Short:         "Install, maintain and remove an OAC sandbox node",
		Long:          rootLong,
		Example:       rootExample,
		Args:          unknownCommand,
		Version:       versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if os.Geteuid() == 0 {
				// Root's records fill in a rerun's flags (recall.go).
				f.host = c.host
			}
			if cmd.Flags().NFlag() == 0 {
				// With no flag, root reruns the host's one installation
				// (`sudo oac-node-install`); anyone else, or on a host
				// with none or several, gets the help.
				if f.host == nil {
					return cmd.Help()
				}
				if _, ok := soleInstallation(f.host()); !ok {
					return cmd.Help()
				}
			}
			if f.json && f.mode() != modeHelper {
				// Even a refusal of the command line is a result.
				c.result = newResultDocument(f.mode().action())
			}
			if err := f.validate(cmd.Flags()); err != nil {
				return err
			}
			if c.result != nil {
				c.result.InstallationID = f.installationID
			}
			mode := f.mode()
			c.mode = &mode
			if f.noColor {
				os.Setenv("NO_COLOR", "1")
			}
			switch mode {
			case modeHelper:
				return runGenerationHelper(cmd.Context(), c, f)
			case modeUninstall:
				return c.runUninstall(cmd.Context(), f)
			}
			return c.runInstall(cmd.Context(), f)
		},
	}
	root.SetIn(c.stdin)
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(c.flagError)
	// SuggestionsFor reads the distance as set (cobra defaults it only for
	// its own unknown-command error): 2 suggests status for stauts.
	root.SuggestionsMinimumDistance = 2
	root.SetHelpCommand(helpCommand())
	root.Flags().SortFlags = false
	f.bind(root.Flags())
	c.bindHostRoot(root.Flags())
	root.AddCommand(c.statusCommand(), c.leasesCommand(), c.versionCommand(), c.commandCommand())
	root.AddCommand(c.checkCommand(), c.uninstallCommand())
	c.completeValues(root)
	c.completionWithoutPackage(root)
	return root
}

// unknownCommand refuses any argument of the root command (its modes take
// flags only), suggesting the command that was probably meant.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return &usageError{msg: msg, notInstall: true}
}

// noArgs refuses arguments of a subcommand that takes flags only.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

// Annotation keys of the subcommands.
const annotationPrefix = "failure-prefix"

// failureOf is how the command that ran ends when it fails: each command has
// its own prefix; the root command's depends on its mode, taken from the
// parsed flags, or from the arguments when they did not parse.
func (c *cli) failureOf(root, cmd *cobra.Command, args []string, err error) failure {
	var ue *usageError
	if errors.As(err, &ue) && ue.notInstall {
		return failure{prefix: "oac-node-install: ", path: root.CommandPath()}
	}
	if cmd != nil && cmd != root {
		prefix := cmd.Annotations[annotationPrefix]
		if prefix == "" {
			prefix = cmd.CommandPath() + ": "
		}
		return failure{prefix: prefix, path: cmd.CommandPath(), changing: cmd.Annotations[annotationChanging] != ""}
	}
	mode := modeInstall
	if c.mode != nil {
		mode = *c.mode
	} else {
		mode = modeFromArgs(args)
	}
	f := failure{prefix: prefixInstall, path: root.CommandPath(), changing: true}
	switch mode {
	case modeUninstall:
		f.prefix = prefixUninstall
	case modeHelper:
		f.prefix = prefixHelper
	}
	return f
}

// modeFromArgs guesses the root command's mode from arguments that did not
// parse, the way parsing would have decided it.
func modeFromArgs(args []string) installerMode {
	mode := modeInstall
	for _, a := range args {
		if a == "--" {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		switch {
		case !strings.HasPrefix(a, "--"):
		case name == flagGenerationAction:
			return modeHelper
		case name == flagUninstall && (!hasValue || value == "true"):
			mode = modeUninstall
		}
	}
	return mode
}
