package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/openagentcore/oac-node-install/steps/record/bootstrap"
)

const prefixCommand = "command: "

const commandLong = `Print the command an operator pastes on a node host to install, rerun or
uninstall a node, as the console shows it: a bash subshell that downloads
this binary from the console's /node-install/, checks its sha256 and runs
it. The enrollment token is read from standard input (--token-stdin), never
from an argument; it appears only in the printed command, which feeds it to
the installer's standard input with the shell builtin printf.`

const commandExample = `  # The install command for a new node (the token on standard input)
  printf '%s\n' "$TOKEN" | oac-node-install command --token-stdin \
      --console https://console.example.com --core-url https://core.example.com \
      --provider docker --installation-id 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c \
      --sha256 "$(awk '$2 == "oac-node-install" {print $1}' SHA256SUMS)"

  # The uninstall command
  oac-node-install command --uninstall --console https://console.example.com \
      --installation-id 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c --sha256 <sha256>`

// commandFlags are the flags of `command`.
type commandFlags struct {
	opts       bootstrap.Options
	tokenStdin bool
}

func (c *cli) commandCommand() *cobra.Command {
	var f commandFlags
	cmd := &cobra.Command{
		Use:         "command",
		Short:       "Print the bootstrap command that installs or uninstalls a node from a console",
		Long:        commandLong,
		Example:     commandExample,
		Args:        noArgs,
		Annotations: map[string]string{annotationPrefix: prefixCommand},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.runCommand(cmd.Context(), &f)
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	o := &f.opts
	fs.StringVar(&o.Console, "console", "", "console origin the installer is downloaded from (the installer's --source-url)")
	fs.StringVar(&o.CoreURL, flagCoreURL, "", "Core's public origin (install)")
	fs.StringVar(&o.InstallationID, flagInstallationID, "", "the node's installation id (canonical UUID)")
	fs.StringVar(&o.Provider, flagProvider, "", "docker or microsandbox (install)")
	fs.StringVar(&o.SHA256, "sha256", "", "the installer binary's sha256, as the console's SHA256SUMS lists it")
	fs.StringVar(&o.CoreCA, flagCoreCA, "", "absolute path on the node host of the PEM file with Core's CA (install)")
	fs.BoolVar(&o.AllowInsecureOrigin, flagAllowInsecureOrigin, false, "allow plain http to an origin that is not loopback")
	fs.BoolVar(&f.tokenStdin, "token-stdin", false, "read the enrollment token from standard input: an install command")
	fs.BoolVar(&o.Uninstall, flagUninstall, false, "an uninstall command")
	fs.BoolVar(&o.Force, flagForce, false, "with --uninstall: the uninstall command passes --force")
	return cmd
}

// runCommand reads the token (install) and prints the rendered command.
func (c *cli) runCommand(ctx context.Context, f *commandFlags) error {
	if f.tokenStdin == f.opts.Uninstall {
		return usagef("exactly one of --token-stdin (an install command) and --uninstall is required")
	}
	if f.tokenStdin {
		token, err := readToken(ctx, c.stdin, c.stderr)
		if err != nil {
			return err
		}
		f.opts.Token = token
	}
	out, err := bootstrap.Render(f.opts)
	var fe *bootstrap.FieldError
	if errors.As(err, &fe) {
		return usagef("%s %s", fe.Field, fe.Reason)
	}
	if err != nil {
		return err
	}
	_, err = io.WriteString(c.stdout, out)
	return err
}
