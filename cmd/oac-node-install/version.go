package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/openagentcore/oac-node-install/workflow"
)

// sourceCommit is the source commit make build passes (-X), used when the
// Go toolchain stamped none (a build with -buildvcs=false).
var sourceCommit string

// versionString is what `version` and --version print: the version the
// journals record (workflow.Version, set by make build), the source commit
// (vcs.revision as the Go toolchain stamped it, else sourceCommit), and the
// Go version.
func versionString() string {
	commit := "unknown (built without version control information)"
	if sourceCommit != "" {
		commit = sourceCommit
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var revision, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if revision != "" {
			commit = revision
			if modified == "true" {
				commit += " (with uncommitted changes)"
			}
		}
	}
	return fmt.Sprintf("oac-node-install %s\ncommit: %s\ngo:     %s", workflow.Version, commit, runtime.Version())
}

func (c *cli) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:         "version",
		Short:       "Print the version, the source commit and the Go version",
		Args:        noArgs,
		Annotations: map[string]string{annotationPrefix: prefixVersion},
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(c.stdout, versionString())
			return err
		},
	}
}
