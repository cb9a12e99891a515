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

// releaseName is the release make build passes (-X): the newest v<semver> tag
// as git describe names it, or a pseudo-version v0.0.0-<time>-<commit>
// when the source has no tag.
var releaseName string

// releaseVersion is the release this binary is: releaseName as make build set
// it, else the main module's version as the Go toolchain stamped it (go
// install of a tagged module), else none.
func releaseVersion() string {
	if releaseName != "" {
		return releaseName
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "(no release: a development build; make build names one)"
}

// versionString is what `version` and --version print: the release
// (releaseVersion), the source commit (vcs.revision as the Go toolchain
// stamped it, else sourceCommit), the build the journals record
// (workflow.Version, set by make build: a journal resumes only in the same
// build) and the Go version.
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
	return fmt.Sprintf("oac-node-install %s\ncommit: %s\nbuild:  %s\ngo:     %s", releaseVersion(), commit, workflow.Version, runtime.Version())
}

func (c *cli) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:         "version",
		Short:       "Print the release, the source commit, the build and the Go version",
		Args:        noArgs,
		Annotations: map[string]string{annotationPrefix: prefixVersion},
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(c.stdout, versionString())
			return err
		},
	}
}
