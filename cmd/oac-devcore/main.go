// Command oac-devcore is the development console: it builds a fixture
// release, publishes it, and serves /node-install/ over HTTPS with its own
// CA, so the installer runs end to end on one machine.
//
//	oac-devcore --data DIR [--listen 127.0.0.1:8443] [--release-host-listen ADDR]
//	            [--provider docker|microsandbox]
//	            [--installer PATH] [--node-program PATH]
//	            [--artifact-size-mib N] [--image-payload-mib N] [--image-attestation]
//
// It also stands in for Core (package devcore): enrollment tokens, the
// node's configuration, enrollment, identity and connection, node removal
// and deployment changes. The admin routes under /core/v1 take
// "Authorization: Bearer <key>" with the key in DIR/admin-key (0600,
// made on the first start), for example:
//
//	curl --cacert DIR/ca.pem -H "Authorization: Bearer $(cat DIR/admin-key)" \
//	     -X POST https://127.0.0.1:8443/core/v1/sandbox/enrollment-tokens
//
// The installer and the node program default to oac-node-install and
// oac-node-dev built beside this program (make build puts all in bin/).
//
// "oac-devcore admin --data DIR ..." calls those routes of the console
// running on DIR (see admin.go): token, nodes, remove-node, deployment,
// publish-generation, drop-generation, bundle; and pause-artifacts,
// resume-artifacts and artifacts, which hold artifact downloads halfway
// (tests).
//
// It runs as whatever account starts it, outside the test host, keeps its
// state below --data, and is never shipped to a node host.
//
// When ready it prints one line with the console URL and the CA file on
// stdout (and the admin key file and installation on stderr), and it exits
// cleanly on SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/devcore"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args, starts the console, and serves until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "admin" {
		return admin(ctx, args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("oac-devcore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg devcore.Config
	var nodeMiB, imageMiB int64
	fs.StringVar(&cfg.DataDir, "data", "", "data directory (CA, build, payload); required")
	fs.StringVar(&cfg.Listen, "listen", devcore.DefaultListen, "console HTTPS listen address")
	fs.StringVar(&cfg.ReleaseHostListen, "release-host-listen", "", "listen address of a second HTTPS server, the release host, that alone holds the Runtime image (the console redirects to it)")
	fs.StringVar(&cfg.Fixture.Installer, "installer", "", "installer binary served as /node-install/oac-node-install (default: oac-node-install beside this program, else a placeholder)")
	fs.StringVar(&cfg.Fixture.NodeProgram, "node-program", "", "node program published as native/bin/oac-node (default: oac-node-dev beside this program, else a placeholder script)")
	fs.StringVar(&cfg.Provider, "provider", release.ProviderDocker, "provider of the installation's nodes: docker or microsandbox")
	fs.Int64Var(&nodeMiB, "artifact-size-mib", 0, "pad the placeholder node program artifact to this many MiB (for transfer benchmarks)")
	fs.Int64Var(&imageMiB, "image-payload-mib", 0, "size of the Runtime image's payload layer in MiB")
	fs.IntVar(&cfg.Fixture.ImagePayloadLayers, "image-payload-layers", 0, "split the Runtime image's payload over this many layers (0 or 1: one)")
	fs.BoolVar(&cfg.Fixture.ImageAttestation, "image-attestation", false, "build the Runtime archive as buildx with its default attestation and the containerd image store save it (an image index listing an attestation manifest)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if cfg.DataDir == "" || fs.NArg() > 0 || nodeMiB < 0 || imageMiB < 0 || (cfg.Provider != release.ProviderDocker && cfg.Provider != release.ProviderMicrosandbox) {
		fmt.Fprintln(stderr, "usage: oac-devcore --data DIR [--listen ADDR] [--release-host-listen ADDR] [--provider docker|microsandbox] [--installer PATH] [--node-program PATH] [--artifact-size-mib N] [--image-payload-mib N] [--image-attestation]")
		return 2
	}
	if nodeMiB > 0 && cfg.Fixture.NodeProgram != "" {
		fmt.Fprintln(stderr, "oac-devcore: --artifact-size-mib pads the placeholder node program; it cannot be used with --node-program")
		return 2
	}
	if cfg.Fixture.Installer == "" {
		cfg.Fixture.Installer = sibling("oac-node-install")
	}
	if cfg.Fixture.NodeProgram == "" && nodeMiB == 0 {
		cfg.Fixture.NodeProgram = sibling("oac-node-dev")
	}
	cfg.Fixture.NodeProgramSize = nodeMiB << 20
	cfg.Fixture.ImagePayloadSize = imageMiB << 20
	cfg.Log = stderr
	s, err := devcore.Start(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "oac-devcore: %v\n", err)
		return 1
	}
	if s.Fixture.PlaceholderInstaller {
		fmt.Fprintln(stderr, "oac-devcore: warning: no --installer given; /node-install/oac-node-install is a placeholder that exits 1")
	}
	line := fmt.Sprintf("oac-devcore: serving %s (CA %s)", s.URL, s.CA.CertPath)
	if s.ReleaseHostURL != "" {
		line += "; release host " + s.ReleaseHostURL
	}
	fmt.Fprintln(stdout, line)
	fmt.Fprintf(stderr, "oac-devcore: Core stand-in for installation %s (%s nodes); admin key in %s\n",
		s.Core.InstallationID(), s.Core.Provider(), filepath.Join(cfg.DataDir, devcore.AdminKeyFileName))
	<-ctx.Done()
	if err := s.Close(); err != nil {
		fmt.Fprintf(stderr, "oac-devcore: stop: %v\n", err)
		return 1
	}
	return 0
}

// sibling is the program name built beside this one (make build puts them
// all in bin/), or "" when there is none.
func sibling(name string) string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	p := filepath.Join(filepath.Dir(self), name)
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		return p
	}
	return ""
}
