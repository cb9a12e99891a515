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

	"github.com/google/uuid"

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
	// stateDir holds identity.json; the node keeps Core's owner epoch in it.
	stateDir string
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
	if err := refreshIdentity(ctx, n); err != nil {
		fmt.Fprintf(stderr, "oac-node-dev run: %v\n", err)
		if errors.Is(err, errRejected) {
			return exitRejected
		}
		return exitError
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
	n := &node{cfg: cfg, id: id, log: log, stateDir: stateDir, tls: &tls.Config{MinVersion: tls.VersionTLS12}}
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
		if errors.Is(err, errRejected) || errors.Is(err, errOwnership) {
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

// health probes the provider (5 s) and fills the host metrics. A
// generation-managing node reports its generations (at most eight).
func (n *node) health(ctx context.Context, host *hostSampler) *nodeproto.Health {
	diag := probe(ctx, n.cfg, 5*time.Second)
	h := &nodeproto.Health{ProviderReady: diag == "", Diagnostic: diag, ObservedAt: time.Now().UTC()}
	if n.gens != nil {
		h.Generations = n.gens.observations()
	}
	host.fill(h, n.stateDir)
	return h
}

// helloIdentity is the identity the hello carries: identity.json's, with
// the backend fingerprint and the capacity Core approved.
func (n *node) helloIdentity() *nodeproto.Identity {
	i := n.id.Identity
	return &nodeproto.Identity{SpecificationDigest: i.SpecificationDigest, DeploymentGeneration: i.DeploymentGeneration, NodeID: i.NodeID,
		InstallationID: i.InstallationID.String(), Provider: i.Provider, BackendFingerprint: i.BackendFingerprint, MaxActive: i.MaxActive, MaxRetained: i.MaxRetained}
}

// errOwnership: Core's owner epoch went back, or a frame names another
// connection or epoch; like the platform's node (sandbox.ErrOwnership) the
// node stops instead of reconnecting.
var errOwnership = errors.New("Core's frame does not belong to this node's connection")

// connection is one session's state: Core's connection id and owner
// epoch, the last request's sequence, and the retention in flight.
type connection struct {
	id       string
	epoch    uint64
	sequence uint64 // of Core's last request
	control  uint64 // of the node's last retention
	pending  *nodeproto.Control
}

// readFrame reads one frame within d.
func readFrame(ws *nodeproto.Conn, d time.Duration) (*nodeproto.Frame, error) {
	ws.SetReadDeadline(time.Now().Add(d))
	msg, err := ws.ReadMessage()
	if err != nil {
		return nil, err
	}
	return nodeproto.Decode(msg)
}

// session runs one connection until it fails or ctx ends, as the
// platform's node program does (CONTRACT §11; agent.go connect): the
// hello, Core's welcome within 15 s, then every read within 35 s — Core
// answers each heartbeat with a heartbeat_ack, so a silent Core ends the
// connection. A generation-managing node follows the deployment of the
// welcome and of each heartbeat_ack, and after each heartbeat asks with a
// retention which of its generations Core still needs: one answered keep
// false is collected.
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
	host := &hostSampler{}
	managed := n.gens != nil
	if err := ws.Send(nodeproto.Frame{Type: nodeproto.TypeHello, Identity: n.helloIdentity(), Health: n.health(ctx, host), GenerationManagement: managed}); err != nil {
		return err
	}
	welcome, err := readFrame(ws, nodeproto.HelloTimeout)
	if err != nil {
		return fmt.Errorf("no welcome: %w", err)
	}
	if welcome.Type != nodeproto.TypeWelcome || managed != (welcome.Deployment != nil) {
		return fmt.Errorf("no welcome: Core sent %s", welcome.Type)
	}
	if welcome.OwnerEpoch < n.id.OwnerEpoch {
		return fmt.Errorf("%w: owner epoch %d is below the retained %d", errOwnership, welcome.OwnerEpoch, n.id.OwnerEpoch)
	}
	if welcome.OwnerEpoch > n.id.OwnerEpoch {
		n.id.OwnerEpoch = welcome.OwnerEpoch
		if err := writeIdentity(n.stateDir, n.id); err != nil {
			return err
		}
	}
	if managed {
		n.gens.target(*welcome.Deployment)
	}
	c := &connection{id: welcome.ConnectionID, epoch: welcome.OwnerEpoch}

	type read struct {
		f   *nodeproto.Frame
		err error
	}
	frames := make(chan read, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			f, err := readFrame(ws, nodeproto.ReadTimeout)
			select {
			case frames <- read{f, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var changed chan struct{}
	if managed {
		changed = n.gens.changed
	}
	tick := time.NewTicker(heartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case r := <-frames:
			if r.err != nil {
				var ce *nodeproto.CloseError
				if errors.As(r.err, &ce) && ce.Code == nodeproto.CloseRemoved {
					return fmt.Errorf("Core removed the node: %w", r.err)
				}
				return r.err
			}
			if err := n.handle(ws, c, r.f); err != nil {
				return err
			}
			continue
		case <-tick.C:
		case <-changed:
		}
		if err := ws.Send(nodeproto.Frame{Type: nodeproto.TypeHeartbeat, ConnectionID: c.id, OwnerEpoch: c.epoch, Health: n.health(ctx, host)}); err != nil {
			return err
		}
		if managed && c.pending == nil {
			if err := n.requestRetention(ws, c); err != nil {
				return err
			}
		}
	}
}

// requestRetention names the generations the node retains (at most
// eight) in a retention frame.
func (n *node) requestRetention(ws *nodeproto.Conn, c *connection) error {
	refs := []nodeproto.Reference{}
	for _, o := range n.gens.observations() {
		refs = append(refs, nodeproto.Reference{Generation: o.Generation, SpecificationDigest: o.SpecificationDigest})
	}
	if len(refs) == 0 {
		return nil
	}
	c.control++
	c.pending = &nodeproto.Control{ID: uuid.NewString(), Sequence: c.control, ConnectionID: c.id, OwnerEpoch: c.epoch, References: refs}
	return ws.Send(nodeproto.Frame{Type: nodeproto.TypeRetention, Control: c.pending})
}

// handle acts on one frame from Core (agent.go's read loop).
func (n *node) handle(ws *nodeproto.Conn, c *connection, f *nodeproto.Frame) error {
	managed := n.gens != nil
	switch f.Type {
	case nodeproto.TypeHeartbeatAck:
		if f.ConnectionID != c.id {
			return fmt.Errorf("a heartbeat_ack of another connection")
		}
		if f.OwnerEpoch != c.epoch || !managed && f.Deployment != nil {
			return errOwnership
		}
		if managed {
			if f.Deployment == nil {
				return errors.New("a heartbeat_ack without the deployment")
			}
			n.gens.target(*f.Deployment)
		}
	case nodeproto.TypeRetentionAck:
		p, r := c.pending, f.Control
		if !managed || p == nil || r.ID != p.ID || r.Sequence != p.Sequence || r.ConnectionID != c.id || r.OwnerEpoch != c.epoch || len(r.Retentions) != len(p.References) {
			return errOwnership
		}
		// The whole answer is checked before the first collection.
		for i, g := range r.Retentions {
			if g.Generation != p.References[i].Generation || g.SpecificationDigest != p.References[i].SpecificationDigest {
				return errOwnership
			}
		}
		c.pending = nil
		n.gens.target(*f.Deployment)
		for _, g := range r.Retentions {
			if !g.Keep {
				n.gens.drop(g)
			}
		}
	case nodeproto.TypeRequest:
		q := f.Request
		if q.ConnectionID != c.id || q.OwnerEpoch != c.epoch || q.Sequence != c.sequence+1 || !managed && q.DeploymentGeneration != n.id.Identity.DeploymentGeneration {
			return errOwnership
		}
		c.sequence = q.Sequence
		// The stand-in runs no sandboxes: no operation is confirmed.
		return ws.Send(nodeproto.Frame{Type: nodeproto.TypeResponse, Response: &nodeproto.Response{ID: q.ID, ConnectionID: c.id, ErrorCode: "unconfirmed"}})
	default:
		return fmt.Errorf("unexpected %s from Core", f.Type)
	}
	return nil
}
