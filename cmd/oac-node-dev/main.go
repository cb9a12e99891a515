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
// Both follow the platform's node program (CONTRACT §11;
// MiniMax-AI/OpenAgentCore services/core/cmd/sandbox-node/main.go and
// services/core/internal/sandbox/node/{identity,enrollment,agent}.go).
//
// register writes <state-dir>/identity.json (0600, atomically) from
// provider.json alone, with capacity 0/0, before Core hears of the node,
// and never reads Core's configuration with the token. A failing provider
// probe (5 s) stops it. It asks Core's identity route with the node's own
// credential (an earlier run whose enrollment answer was lost is finished
// there), otherwise enrolls once with the token; a lost answer ends it
// with "enrollment response unconfirmed; retry with the same state
// directory". Core's capacity must hold 1 <= max_active <= max_retained
// <= 1000000. It prints the enrollment as one JSON line. A rejection
// prints "node enrollment rejected (HTTP <status>[ <code>])" on stderr,
// for 401 followed by ": sandbox node authentication rejected".
//
// run asks the identity route before it connects (401: exit 78), then
// keeps the node's WebSocket connection to Core in the platform's dialect
// (package nodeproto: hello, welcome, a heartbeat every 10 s with the
// provider's readiness, the first failing check's diagnostic code of
// CONTRACT §6.1 and the host metrics, answered by Core's heartbeat_ack
// within the 35 s read deadline) and, when <config dir>/generation-preparer.pyz
// is a 0600 regular file (multi-generation mode, as the platform's node
// program; anything else of that name stops run), runs
// `python3 <config dir>/generation-preparer.pyz --installation-id ID
// --generation-action prepare|collect --generation N --specification-digest HEX
// [--allow-insecure-origin]` (the flag when the identity allows an insecure
// origin) in its own process group: prepare when Core's deployment names a new
// generation, collect (2-minute timeout) when Core answers a retention with
// keep false; exit 65 reports runtime_download_failed. Like the platform's
// node program it never runs repair. It holds a shared lock on the lease of
// each generation it reports ready, as oac-node does around the native
// helpers serving it, and lets go of it before the generation's collection
// (serving.go).
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
