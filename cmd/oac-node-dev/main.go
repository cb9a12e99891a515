// Command oac-node-dev is the stand-in for the platform's node program
// oac-node, for tests and the demo. It keeps the oac-node contract the
// installer relies on (CONTRACT §4.3), and nothing more: it runs no
// sandboxes.
//
//	oac-node-dev protocol-version
//	oac-node-dev register --config ABS --state-dir ABS --core-url ORIGIN --name NAME
//	             --enrollment-token-file ABS [--allow-insecure-origin] [--core-ca PEM]
//	oac-node-dev run --config ABS --state-dir ABS [--core-url ORIGIN]
//
// register reads Core's configuration with the token, writes
// <state-dir>/identity.json (0600, atomically) before it enrolls, and
// recovers a lost enrollment answer under the same identity: a rerun, or a
// retry after a transport failure, asks Core's identity route with the
// persisted credential instead of enrolling again. It prints the
// enrollment as one JSON line. A rejection prints
// "node enrollment rejected (HTTP <status> <code>)" on stderr.
//
// run keeps the node's WebSocket connection to Core (hello, heartbeats
// every 10 s with the provider's readiness and the first failing check's
// diagnostic code of CONTRACT §6.1) and, when <config dir>/generation-preparer.pyz
// is a 0600 regular file (multi-generation mode, as the platform's node
// program; anything else of that name stops run), runs
// `python3 <config dir>/generation-preparer.pyz --installation-id ID
// --generation-action prepare|collect --generation N --specification-digest HEX
// [--allow-insecure-origin]` (the flag when the identity allows an insecure
// origin) in its own process group: prepare when Core's deployment names a new
// generation, collect (2-minute timeout) on a drop grant; exit 65 reports
// runtime_download_failed. Like the platform's node program it never runs
// repair. It holds
// a shared lock on the lease of each generation it reports ready, as
// oac-node does around the native helpers serving it, and lets go of it
// before the generation's collection (serving.go).
//
// It runs as the service account oac-node: register in install's
// service-account child (the register step), run as the node's unit
// (User=oac-node), and the generation helper it calls runs as oac-node too.
//
// Exit status: 0, 1 on errors, 2 on usage errors, and 78 (EX_CONFIG) when
// Core answers 401 to the token or the credential.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/nodeproto"
)

// Exit statuses.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitRejected = 78 // EX_CONFIG: Core refused the token or credential
)

const usage = "usage: oac-node-dev register|run --config PATH --state-dir PATH"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "protocol-version":
		fmt.Fprintln(stdout, nodeproto.ProtocolVersion)
		return exitOK
	case "register":
		return register(ctx, args[1:], stdout, stderr)
	case "run":
		return runNode(ctx, args[1:], stderr)
	}
	fmt.Fprintln(stderr, usage)
	return exitUsage
}
