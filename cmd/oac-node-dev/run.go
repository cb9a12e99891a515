package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"time"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/nodeproto"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
)

// heartbeatInterval is how often the node reports (a variable for tests).
var heartbeatInterval = nodeproto.HeartbeatInterval

// errRejected: Core answered 401 to the node's credential.
var errRejected = errors.New("Core no longer accepts this node's credential (HTTP 401)")

type node struct {
	cfg  *provider.Config
	id   *noderoot.NodeIdentity
	tls  *tls.Config
	gens *generations // nil without the retained helper
	log  io.Writer
}

func runNode(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("oac-node-dev run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var config, stateDir, coreURL string
	fs.StringVar(&config, "config", "", "absolute path of provider.json")
	fs.StringVar(&stateDir, "state-dir", "", "absolute state directory")
	fs.StringVar(&coreURL, "core-url", "", "Core's origin; must equal the retained one")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 || !filepath.IsAbs(config) || !filepath.IsAbs(stateDir) {
		fmt.Fprintln(stderr, "usage: oac-node-dev run --config ABS --state-dir ABS [--core-url ORIGIN]")
		return exitUsage
	}
	n, lock, err := openNode(ctx, config, stateDir, coreURL, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "oac-node-dev run: %v\n", err)
		return exitError
	}
	defer lock.Unlock()
	if n.gens != nil {
		defer n.gens.close()
	}
	if err := n.loop(ctx); err != nil {
		fmt.Fprintf(stderr, "oac-node-dev run: %v\n", err)
		if errors.Is(err, errRejected) {
			return exitRejected
		}
		return exitError
	}
	return exitOK
}

// openNode reads and cross-checks the configuration and the identity and
// takes the state directory's lock.
func openNode(ctx context.Context, config, stateDir, coreURL string, log io.Writer) (*node, *safefile.FileLock, error) {
	cfg, err := readConfig(config)
	if err != nil {
		return nil, nil, err
	}
	lock, err := lockState(stateDir)
	if err != nil {
		return nil, nil, err
	}
	ok := false
	defer func() {
		if !ok {
			lock.Unlock()
		}
	}()
	id, err := readIdentity(stateDir)
	if err != nil {
		return nil, nil, fmt.Errorf("read the node identity (register first): %w", err)
	}
	switch {
	case id.Identity.InstallationID != cfg.InstallationID || id.Identity.Provider != cfg.Provider:
		return nil, nil, errors.New("the identity belongs to another installation or provider")
	case id.CoreURL != cfg.Origin():
		return nil, nil, fmt.Errorf("the identity names Core %s, the configuration %s", id.CoreURL, cfg.Origin())
	case coreURL != "" && coreURL != id.CoreURL:
		return nil, nil, fmt.Errorf("--core-url %s is not the node's Core %s", coreURL, id.CoreURL)
	}
	if err := checkOrigin(id.CoreURL, id.AllowInsecureOrigin); err != nil {
		return nil, nil, err
	}
	n := &node{cfg: cfg, id: id, log: log, tls: &tls.Config{MinVersion: tls.VersionTLS12}}
	if id.CoreCA != "" {
		pool, sum, err := readCA(id.CoreCA)
		if err != nil {
			return nil, nil, err
		}
		if sum != id.CoreCASHA256 {
			return nil, nil, fmt.Errorf("the Core CA %s changed since registration", id.CoreCA)
		}
		n.tls.RootCAs = pool
	}
	helper, err := findPreparer(config)
	if err != nil {
		return nil, nil, err
	}
	if helper != "" {
		if want := filepath.Join(filepath.Dir(config), layout.NodeStateDir); filepath.Clean(stateDir) != want {
			return nil, nil, fmt.Errorf("with %s the state directory must be %s", layout.HelperLauncherFile, want)
		}
		fmt.Fprintf(log, "oac-node-dev: multi-generation mode: generations are prepared and collected by python3 %s\n", helper)
		n.gens = newGenerations(ctx, helper, config, cfg.InstallationID, id.AllowInsecureOrigin, id.Identity.DeploymentGeneration, id.Identity.SpecificationDigest, log)
	}
	ok = true
	return n, lock, nil
}

// loop keeps the connection: reconnects after failures with a jittered
// backoff from 1 s doubling to 30 s (reset after a connection that lived
// 30 s), returns nil when ctx ends and errRejected on 401.
func (n *node) loop(ctx context.Context) error {
	backoff := time.Second
	for {
		start := time.Now()
		err := n.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errRejected) {
			return err
		}
		if time.Since(start) >= 30*time.Second {
			backoff = time.Second
		}
		pause := backoff/2 + rand.N(backoff/2+1)
		fmt.Fprintf(n.log, "oac-node-dev: connection to Core ended (%v); reconnecting in %s\n", err, pause.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

func (n *node) health(ctx context.Context) nodeproto.Health {
	diag := probe(ctx, n.cfg, 5*time.Second)
	return nodeproto.Health{ProviderReady: diag == "", Diagnostic: diag, ObservedAt: time.Now().UTC().Format(time.RFC3339)}
}

// session runs one connection until it fails or ctx ends. After the
// welcome the node sets no read deadline: the stand-in Core writes only
// when the deployment changes, and a connection Core dropped shows as a
// failed read or heartbeat write.
func (n *node) session(ctx context.Context) error {
	h := http.Header{"Authorization": {"Bearer " + n.id.Credential}}
	ws, resp, err := nodeproto.DialURL(ctx, n.id.CoreURL+"/api/v1/sandbox-node/connect?node_id="+n.id.Identity.NodeID, h, n.tls)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return errRejected
		}
		return err
	}
	defer ws.Close(nodeproto.CloseNormal, "")
	hello := nodeproto.Hello{
		Type: nodeproto.TypeHello, ProtocolVersion: nodeproto.ProtocolVersion,
		Identity: nodeproto.Identity{
			NodeID: n.id.Identity.NodeID, InstallationID: n.id.Identity.InstallationID.String(), Provider: n.id.Identity.Provider,
			DeploymentGeneration: n.id.Identity.DeploymentGeneration, SpecificationDigest: n.id.Identity.SpecificationDigest,
		},
		Health:               n.health(ctx),
		GenerationManagement: n.gens != nil,
	}
	if err := ws.Send(hello); err != nil {
		return err
	}
	ws.SetReadDeadline(time.Now().Add(nodeproto.HelloTimeout))
	msg, err := ws.ReadMessage()
	if err != nil {
		return fmt.Errorf("no welcome: %w", err)
	}
	var welcome nodeproto.Welcome
	if err := nodeproto.Decode(msg, &welcome); err != nil || welcome.Type != nodeproto.TypeWelcome {
		return fmt.Errorf("no welcome: %v", err)
	}
	ws.SetReadDeadline(time.Time{})
	if n.gens != nil && welcome.Deployment != nil {
		n.gens.target(*welcome.Deployment)
	}

	type read struct {
		msg []byte
		err error
	}
	msgs := make(chan read, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			m, err := ws.ReadMessage()
			select {
			case msgs <- read{m, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var changed chan struct{}
	if n.gens != nil {
		changed = n.gens.changed
	}
	tick := time.NewTicker(heartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case r := <-msgs:
			if r.err != nil {
				var ce *nodeproto.CloseError
				if errors.As(r.err, &ce) && ce.Code == nodeproto.CloseRemoved {
					return fmt.Errorf("Core removed the node: %w", r.err)
				}
				return r.err
			}
			if err := n.handle(r.msg); err != nil {
				return err
			}
		case <-tick.C:
		case <-changed:
		}
		hb := nodeproto.Heartbeat{Type: nodeproto.TypeHeartbeat, Health: n.health(ctx), Generations: []nodeproto.Observation{}}
		if n.gens != nil {
			hb.Generations = n.gens.observations()
		}
		if err := ws.Send(hb); err != nil {
			return err
		}
	}
}

// handle acts on one message from Core.
func (n *node) handle(msg []byte) error {
	typ, err := nodeproto.TypeOf(msg)
	if err != nil {
		return err
	}
	switch typ {
	case nodeproto.TypeDeployment:
		var d nodeproto.DeploymentChange
		if err := nodeproto.Decode(msg, &d); err != nil {
			return err
		}
		if n.gens != nil {
			n.gens.target(d.Deployment)
		}
	case nodeproto.TypeDrop:
		var d nodeproto.Drop
		if err := nodeproto.Decode(msg, &d); err != nil {
			return err
		}
		if n.gens != nil {
			n.gens.drop(d)
		}
	default:
		return fmt.Errorf("unexpected message %q from Core", typ)
	}
	return nil
}
