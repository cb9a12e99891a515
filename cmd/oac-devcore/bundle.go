package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/devcore"
	"github.com/openagentcore/oac-node-install/steps/record/console"
)

const bundleUsage = `usage: oac-devcore admin --data DIR bundle OUT
  writes an offline bundle (oac-node-install --bundle OUT) at OUT, a new directory: the console's
  active release and the release of every generation Core serves that is not the active one`

// adminBundle writes an offline bundle from the payload of the console
// running on data: the active release at the top, the Runtime release of
// every generation Core still serves in releases/<commit>/. It prints the
// bundle's directory and what it holds; run it as root so that the
// bundle is root's, as the installer requires.
func adminBundle(ctx context.Context, data string, args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || !filepath.IsAbs(args[0]) {
		fmt.Fprintln(stderr, bundleUsage)
		return 2
	}
	answer, err := adminCall(ctx, data, http.MethodGet, "/core/v1/sandbox/deployment", "")
	if err != nil {
		fmt.Fprintf(stderr, "oac-devcore admin bundle: %v\n", err)
		return 1
	}
	var dep devcore.DeploymentView
	if err := decodeJSON(answer, &dep); err != nil {
		fmt.Fprintf(stderr, "oac-devcore admin bundle: %v\n", err)
		return 1
	}
	var commits []string
	for _, g := range dep.Generations {
		if !g.Dropped {
			commits = append(commits, g.SourceCommit)
		}
	}
	res, err := console.WriteBundle(filepath.Join(data, "node-payload"), args[0], commits)
	if err != nil {
		fmt.Fprintf(stderr, "oac-devcore admin bundle: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "bundle %s: release %s", args[0], res.Current)
	if len(res.Releases) > 0 {
		fmt.Fprintf(stdout, "; releases/%s", strings.Join(res.Releases, ", releases/"))
	}
	fmt.Fprintln(stdout)
	for _, m := range res.Missing {
		fmt.Fprintf(stderr, "oac-devcore admin bundle: warning: the console does not hold %s (the release host does); the bundle lacks it\n", m)
	}
	return 0
}
