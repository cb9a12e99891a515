package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/status"
)

// inspectFlags are the flags of status and leases.
type inspectFlags struct {
	// installationIDArg is --installation-id as typed; installationID
	// is it parsed ("" for every installation), set by validate.
	installationIDArg string
	installationID    ident.InstallationID
	json              bool
	noColor           bool
}

func (f *inspectFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.installationIDArg, flagInstallationID, "", "only this installation (canonical UUID)")
	fs.BoolVar(&f.json, "json", false, "print one JSON document (format 1) instead of text")
	fs.BoolVar(&f.noColor, flagNoColor, false, "plain output without colors (sets NO_COLOR=1)")
}

func (f *inspectFlags) validate() error {
	if f.installationIDArg == "" {
		return nil
	}
	id, err := parseInstallationID(f.installationIDArg)
	f.installationID = id
	return err
}

// inspectCommand is a read-only command over the host's installations
// (status, leases): its flags, their validation, and its failure prefix.
func (c *cli) inspectCommand(use, short, long, example, prefix string, run func(context.Context, inspectFlags) error) *cobra.Command {
	var f inspectFlags
	cmd := &cobra.Command{
		Use:         use,
		Short:       short,
		Long:        long,
		Example:     example,
		Args:        noArgs,
		Annotations: map[string]string{annotationPrefix: prefix},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			if f.noColor {
				os.Setenv("NO_COLOR", "1")
			}
			if os.Geteuid() != 0 {
				return needsRoot(use, f)
			}
			lessGC()
			return run(cmd.Context(), f)
		},
	}
	cmd.Flags().SortFlags = false
	f.bind(cmd.Flags())
	c.bindHostRoot(cmd.Flags())
	return cmd
}

// needsRoot is the failure of status or leases run without root: root's
// records are root's alone and the node roots are read by a child as the
// service account, so without root the command would see no installation
// where there are some. It names the command to run instead.
func needsRoot(use string, f inspectFlags) error {
	again := "sudo oac-node-install " + use
	if f.installationID != "" {
		again += " --" + flagInstallationID + " " + f.installationID.String()
	}
	if f.json {
		again += " --json"
	}
	return fmt.Errorf("needs root: it reads root's records of the installations, and the node roots as the service account; run `%s`", again)
}

// dialSystemd, when set, is how status reaches systemd instead of the
// host's system bus (tests).
var dialSystemd func(context.Context) (status.UnitReader, error)

// inspectTimeout, when set, replaces status.DefaultTimeout as the deadline
// of the service-account child of status and leases (tests).
var inspectTimeout time.Duration

// inspectOptions is what status and leases read, and how their
// service-account child runs: its output to stderr, its signals through
// childSignals.
func (c *cli) inspectOptions(f inspectFlags) status.Options {
	return status.Options{Host: c.host(), InstallationID: f.installationID, Output: c.stderr, Signals: childSignals,
		Timeout: inspectTimeout, Systemd: dialSystemd, InstallCommand: continueCommand}
}

// lessGC lets the heap of a read-only inspection grow to five times its
// live size between collections (GOGC=400): status and leases live for
// one document, whose decoded node roots are most of their heap, and the
// collector's default pace spends a fifth of their CPU time on memory the
// process frees at exit anyway. Their heap stays a few megabytes even for
// a thousand generations.
func lessGC() { debug.SetGCPercent(400) }
