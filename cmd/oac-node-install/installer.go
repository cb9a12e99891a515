package main

import (
	"context"
	"fmt"
	"io"
	"os"
)

// runInstaller runs install, uninstall or the generation helper.
func runInstaller(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	f, err := parseInstallerFlags(args)
	if err != nil {
		return err
	}
	if f.noColor {
		os.Setenv("NO_COLOR", "1")
	}
	switch {
	case f.generationAction != "":
		return runGenerationHelper(ctx, f, stdout, stderr)
	case f.uninstall:
		if os.Geteuid() != 0 {
			return fmt.Errorf("uninstalling a node requires root; rerun the same command with sudo. Nothing was changed.")
		}
		return fmt.Errorf("uninstall: the uninstall workflow's steps are not in this build yet. Nothing was changed.")
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("installing a node requires root; rerun the same command with sudo. Nothing was changed.")
	}
	return fmt.Errorf("install: the installation workflow's steps are not in this build yet. Nothing was changed.")
}
