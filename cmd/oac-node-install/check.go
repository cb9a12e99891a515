package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
)

const checkLong = `Run every check the installation runs before it changes anything, and show
each one's result: ok, FAIL with what to do, or skipped with why. It takes
the install command's flags and changes nothing on the host.

With --enrollment-token-stdin it reads the enrollment token from standard
input, as install does, and reads Core's configuration with it over TLS
(which does not use the token up): it then also checks the console and
Core, the token, the provider Core's deployment uses, the sandbox size
against this host's CPUs and memory, and the free space against the
release's sizes. Without the token, those checks are shown as skipped, and
so is the free disk space unless --bundle gives the release metadata to
count from. Without root, the checks that need root (the Docker Engine,
the installer's bookkeeping) are skipped and say so.

The provider checked is Core's deployment's (with the token), else the one
--provider names, else the one this host recorded for the installation,
else both: then a provider's failures do not fail the check when the other
provider passes (they are shown as skipped, with what fails).

--json prints one document instead (format 1): {"format":1,
"installation_id":…, "checks":[{"name":…, "result":"ok"|"fail"|"skipped"|"warning",
"detail":…}], "ok":n, "failed":n, "skipped":n, "warnings":n}.

A check that passes may carry a warning (shown as "warning", and in --json
as "result":"warning" counted in "warnings"): python3 missing from the PATH
systemd gives services, which the platform's node program needs to prepare
and collect later Runtime generations. A warning fails nothing.

Exit codes: 0 no check failed; 1 a check failed, or check itself failed.`

const checkExample = `  sudo oac-node-install check --source-url https://console.example.com \
      --core-url https://core.example.com --provider docker \
      --installation-id 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c

  # With the enrollment token (not used up): Core, the size, the space
  printf '%s\n' "$TOKEN" | sudo oac-node-install check --enrollment-token-stdin \
      --source-url https://console.example.com --core-url https://core.example.com \
      --installation-id 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c --json`

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
			if err := f.validate(cmd.Flags()); err != nil {
				return err
			}
			if f.noColor {
				os.Setenv("NO_COLOR", "1")
			}
			return c.runCheck(cmd.Context(), f, f.json)
		},
	}
	all := pflag.NewFlagSet("install", pflag.ContinueOnError)
	f.bind(all)
	fs := cmd.Flags()
	fs.SortFlags = false
	for _, name := range checkFlags {
		fs.AddFlag(all.Lookup(name))
	}
	fs.AddFlag(all.Lookup(flagTokenStdin))
	// install's --json, with check's meaning (all is this command's own).
	js := all.Lookup(flagJSON)
	js.Usage = "print one JSON document (format 1) of the checks instead of lines"
	fs.AddFlag(js)
	c.bindHostRoot(fs)
	return cmd
}

// runCheck runs the command's own checks (root, the source, the Core CA,
// the proxy settings, systemd on the bus) and then install.Probe, prints
// every result, and fails when one failed.
func (c *cli) runCheck(ctx context.Context, f *installerFlags, asJSON bool) error {
	if !asJSON {
		c.warnInsecure(f)
	}
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
	proxyFunc, perr := proxySettings()
	checks = append(checks, ca, checkOf("proxy settings", perr))
	bus := len(checks)
	checks = append(checks, c.systemdCheck(ctx))

	probe := install.Probe{Options: opts, Host: host, Environ: os.Environ(), Machine: machine(), NoRoot: needsRoot}
	if f.tokenStdin && err == nil && ca.Err == nil && perr == nil {
		// The token is read as install reads it, and only checked and
		// sent to Core: reading the configuration does not use it up.
		tok, terr := readToken(ctx, c.stdin, c.stderr)
		if terr != nil {
			return terr
		}
		if terr := install.CheckToken(tok); terr != nil {
			probe.ConfigurationErr = terr
		} else {
			roots, _ := coreRoots(opts.CoreCA)
			probe.Roots, probe.Proxy = roots, proxy.FromEnviron(os.Environ())
			probe.Configuration, _, probe.ConfigurationErr = install.CoreReader{Roots: roots, Proxy: proxyFunc}.Read(ctx, opts, tok)
		}
	}
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
	pchecks := probe.Run(ctx)
	if slices.ContainsFunc(pchecks, func(ch install.Check) bool { return ch.Name == install.CheckSystemdName && ch.Failed() }) {
		// The host does not run systemd: one line says so, not a second
		// one about its bus.
		checks = slices.Delete(checks, bus, bus+1)
	}
	checks = append(checks, pchecks...)
	checks = append(checks, pythonCheck(c.hostRoot))
	if asJSON {
		return c.printCheckJSON(f.installationID.String(), checks)
	}

	out.heading(fmt.Sprintf("Check installation %s (nothing is changed)", f.installationID))
	failed, skipped, warned := 0, 0, 0
	for _, ch := range checks {
		out.check(ch)
		switch {
		case ch.Failed():
			failed++
		case ch.Skipped != "":
			skipped++
		case ch.Warning != "":
			warned++
		}
	}
	warnings := ""
	if warned > 0 {
		warnings = fmt.Sprintf(", %d with a warning", warned)
	}
	fmt.Fprintf(c.stdout, "\n%d checks: %d ok, %d failed, %d skipped%s.\n", len(checks), len(checks)-failed-skipped-warned, failed, skipped, warnings)
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed", failed, len(checks))
	}
	return nil
}

// servicePath is the PATH systemd gives a service that sets none, as the
// node's unit does (systemd's default): where the node program finds
// python3.
var servicePath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// checkPythonName names the python3 check.
const checkPythonName = "python3 for the node program"

// nodePython returns the python3 the node's unit would run (below the host
// root in test builds): the first executable regular file python3 in
// servicePath, or "".
func nodePython(hostRoot string) string {
	for _, dir := range servicePath {
		p := filepath.Join(hostRoot, dir, "python3")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && unix.Access(p, unix.X_OK) == nil {
			return p
		}
	}
	return ""
}

// pythonCheck passes with a warning when the node program would find no
// python3: the platform's node program runs the generation helper's
// launcher with it (CONTRACT §11), so without it the node serves its
// enrolled generation but prepares and collects no later one. The
// installation itself does not need python3.
func pythonCheck(hostRoot string) install.Check {
	ch := install.Check{Name: checkPythonName}
	if nodePython(hostRoot) == "" {
		ch.Warning = "no python3 on the PATH systemd gives services (" + strings.Join(servicePath, ":") +
			"): the node program needs it to prepare and collect later Runtime generations; install the python3 package"
	}
	return ch
}

// checkOf is a check named name whose outcome is err.
func checkOf(name string, err error) install.Check { return install.Check{Name: name, Err: err} }

// systemdCheck asks for systemd as install does before its first change,
// on the system bus or else its private socket, and checks its version
// (install's preflight refuses one older than the node's unit needs). The
// check's name says how systemd answered and which version it is. A test
// build's host root has no bus of its own.
func (c *cli) systemdCheck(ctx context.Context) install.Check {
	if c.hostRoot != "" {
		return install.Check{Name: "systemd on the system bus", Skipped: "a test host root: the machine's bus is not its systemd"}
	}
	sd, err := systemd.Dial(ctx)
	if err != nil {
		return install.Check{Name: "systemd over D-Bus", Err: fmt.Errorf("systemd answers neither on the system bus nor on /run/systemd/private (%v)", err), Hint: "Nodes run as systemd services"}
	}
	defer sd.Close()
	return systemdCheckOf(ctx, sd, sd.Via)
}

// systemdCheckOf is the check of a manager reached via ("system bus" or
// "/run/systemd/private"): its version, named with the way it was reached.
func systemdCheckOf(ctx context.Context, m systemd.Versioned, via string) install.Check {
	how := "on the system bus"
	if via != "system bus" {
		how = "on its private socket " + via + " (no system bus)"
	}
	ch := install.SystemdVersionCheck(ctx, m)
	if ch.Failed() {
		ch.Name = "systemd " + how
		return ch
	}
	ch.Name = strings.Replace(ch.Name, install.CheckSystemdVersionName, "systemd", 1) + " " + how
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
// the error and the hint on the same line; for a skipped check, why; for a
// warning, the warning. A
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
	case ch.Warning != "":
		return "warning", field(ch.Name) + ": " + field(ch.Warning)
	}
	return "ok", field(ch.Name)
}

// checkDocument is `check --json` (format 1).
type checkDocument struct {
	Format         int         `json:"format"`
	InstallationID string      `json:"installation_id"`
	Checks         []checkJSON `json:"checks"`
	OK             int         `json:"ok"`
	Failed         int         `json:"failed"`
	Skipped        int         `json:"skipped"`
	Warnings       int         `json:"warnings"`
}

// checkJSON is one check: its name, "ok", "fail", "skipped" or "warning",
// and for a failure the error and hint, for a skipped check why, for a
// warning the warning (sanitized as the lines are).
type checkJSON struct {
	Name   string `json:"name"`
	Result string `json:"result"`
	Detail string `json:"detail,omitempty"`
}

// printCheckJSON prints the checks as one document and fails as the lines
// do when one failed.
func (c *cli) printCheckJSON(id string, checks []install.Check) error {
	doc := checkDocument{Format: 1, InstallationID: id, Checks: []checkJSON{}}
	for _, ch := range checks {
		j := checkJSON{Name: field(ch.Name), Result: "ok"}
		switch {
		case ch.Failed():
			j.Result, doc.Failed = "fail", doc.Failed+1
			msg := strings.TrimSuffix(strings.TrimSpace(ch.Err.Error()), ".")
			if ch.Hint != "" {
				msg += ". " + strings.TrimSuffix(ch.Hint, ".")
			}
			j.Detail = field(msg)
		case ch.Skipped != "":
			j.Result, j.Detail, doc.Skipped = "skipped", field(ch.Skipped), doc.Skipped+1
		case ch.Warning != "":
			j.Result, j.Detail, doc.Warnings = "warning", field(ch.Warning), doc.Warnings+1
		default:
			doc.OK++
		}
		doc.Checks = append(doc.Checks, j)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(c.stdout, "%s\n", b); err != nil {
		return err
	}
	if doc.Failed > 0 {
		return &quietExit{code: exitFailure}
	}
	return nil
}
