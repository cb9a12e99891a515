package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
)

const checkLong = `Run every check the installation runs before it changes anything, and show
each one's result: ok, FAIL with what to do, or skipped with why. It takes
the install command's flags, changes nothing on the host, contacts neither
the console nor Core, and never reads standard input: the checks that need
the enrollment token or Core's deployment specification (the sandbox size)
are shown as skipped, and so is the free disk space for the node's files
unless --bundle gives the release metadata to count from. Without root, the checks that need root (the Docker
Engine, the installer's bookkeeping) are skipped and say so.

The provider checked is the one --provider names, else the one this host
recorded for the installation, else both.

Exit codes: 0 no check failed; 1 a check failed, or check itself failed.`

const checkExample = `  sudo oac-node-install check --source-url https://console.example.com \
      --core-url https://core.example.com --provider docker \
      --installation-id 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c`

const prefixCheck = "check: "

// checkFlags are the install flags check takes, as install binds them.
var checkFlags = []string{flagSourceURL, flagBundle, flagCoreURL, flagProvider, flagInstallationID, flagCoreCA,
	flagAllowInsecureOrigin, flagNoColor}

// checkCommand is `oac-node-install check`: install's preflight, every
// result printed (kubeadm's preflight phase).
func (c *cli) checkCommand() *cobra.Command {
	f := &installerFlags{}
	cmd := &cobra.Command{
		Use:         "check",
		Short:       "Run every check install runs before a change and show each result; change nothing",
		Long:        checkLong,
		Example:     checkExample,
		Args:        noArgs,
		Annotations: map[string]string{annotationPrefix: prefixCheck},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.tokenStdin {
				return usagef("check never reads standard input, so it takes no --%s: run it without the token (the checks that need it are shown as skipped)", flagTokenStdin)
			}
			if err := f.validate(cmd.Flags()); err != nil {
				return err
			}
			if f.noColor {
				os.Setenv("NO_COLOR", "1")
			}
			return c.runCheck(cmd.Context(), f)
		},
	}
	all := pflag.NewFlagSet("install", pflag.ContinueOnError)
	f.bind(all)
	fs := cmd.Flags()
	fs.SortFlags = false
	for _, name := range checkFlags {
		fs.AddFlag(all.Lookup(name))
	}
	// Accepted only to be refused with a reason.
	fs.AddFlag(all.Lookup(flagTokenStdin))
	fs.MarkHidden(flagTokenStdin)
	c.bindHostRoot(fs)
	return cmd
}

// runCheck runs the command's own checks (root, the source, the Core CA,
// the proxy settings, systemd on the bus) and then install.Probe, prints
// every result, and fails when one failed.
func (c *cli) runCheck(ctx context.Context, f *installerFlags) error {
	c.warnInsecure(f)
	host := c.host()
	out := newOutput(c.stdout)
	root := os.Geteuid() == 0
	needsRoot := ""
	if !root {
		needsRoot = "needs root"
	}
	var checks []install.Check
	rootCheck := install.Check{Name: "running as root"}
	if !root {
		rootCheck.Skipped = "not root: the checks that need root are skipped; install needs root, so run check with sudo to see them all"
	}
	checks = append(checks, rootCheck, checkOf("installation source", checkSource(f)))
	opts, err := installOptions(f)
	ca := install.Check{Name: "Core CA (--core-ca)"}
	switch {
	case err != nil:
		ca.Err = err
	case f.coreCA == "":
		ca.Skipped = "not given: Core's certificate must be trusted by the system roots"
	default:
		_, ca.Err = coreRoots(opts.CoreCA)
	}
	_, perr := proxySettings()
	checks = append(checks, ca, checkOf("proxy settings", perr), c.systemdCheck(ctx))

	probe := install.Probe{Options: opts, Host: host, Environ: os.Environ(), Machine: machine(), NoRoot: needsRoot}
	if root {
		engine, err := docker.New(c.dockerHost())
		if err != nil {
			return err
		}
		defer engine.Close()
		probe.Engine = engine
	} else {
		probe.NoEngine = "needs root to ask the Docker Engine"
	}
	checks = append(checks, probe.Run(ctx)...)

	out.heading(fmt.Sprintf("Check installation %s (nothing is changed)", f.installationID))
	failed, skipped := 0, 0
	for _, ch := range checks {
		out.check(ch)
		switch {
		case ch.Failed():
			failed++
		case ch.Skipped != "":
			skipped++
		}
	}
	fmt.Fprintf(c.stdout, "\n%d checks: %d ok, %d failed, %d skipped.\n", len(checks), len(checks)-failed-skipped, failed, skipped)
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed", failed, len(checks))
	}
	return nil
}

// checkOf is a check named name whose outcome is err.
func checkOf(name string, err error) install.Check { return install.Check{Name: name, Err: err} }

// systemdCheck asks for systemd on the system bus, as install does before
// its first change. A test build's host root has no bus of its own.
func (c *cli) systemdCheck(ctx context.Context) install.Check {
	ch := install.Check{Name: "systemd on the system bus"}
	if c.hostRoot != "" {
		ch.Skipped = "a test host root: the machine's bus is not its systemd"
		return ch
	}
	sd, err := systemd.Dial(ctx)
	if err != nil {
		ch.Err, ch.Hint = fmt.Errorf("systemd does not answer on the system bus (%v)", err), "Nodes run as systemd services"
		return ch
	}
	sd.Close()
	return ch
}

// dockerHost is the engine install's provider configuration names; a test
// build's host root has its own socket, the one the preflight looks at.
func (c *cli) dockerHost() string {
	if c.hostRoot == "" {
		return provider.DockerHost
	}
	return "unix://" + filepath.Join(c.hostRoot, "var/run/docker.sock")
}

// machine is uname's machine ("x86_64").
func machine() string {
	var uts unix.Utsname
	unix.Uname(&uts)
	return unix.ByteSliceToString(uts.Machine[:])
}

// checkText is one check's line: its result, its name and, for a failure,
// the error and the hint on the same line; for a skipped check, why. A
// check's error never says that nothing was changed (the commands that
// change the host add it where they print a refusal): check changes
// nothing at all.
func checkText(ch install.Check) (result, text string) {
	switch {
	case ch.Failed():
		msg := strings.TrimSuffix(strings.TrimSpace(ch.Err.Error()), ".")
		if ch.Hint != "" {
			msg += ". " + strings.TrimSuffix(ch.Hint, ".")
		}
		return "FAIL", field(ch.Name) + ": " + field(msg) + "."
	case ch.Skipped != "":
		return "skipped", field(ch.Name) + ": " + field(ch.Skipped)
	}
	return "ok", field(ch.Name)
}
