package devcore

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/nodeproto"
)

// nodeConn is a node's live connection.
type nodeConn struct {
	ws                   *nodeproto.Conn
	generationManagement bool
}

// send writes a frame to the node; a failing connection is closed (the
// node reconnects). Called with c.mu held.
func (nc *nodeConn) send(f nodeproto.Frame) {
	if nc.ws == nil {
		return
	}
	if err := nc.ws.Send(f); err != nil {
		nc.ws.Close(nodeproto.CloseNormal, "write failed")
	}
}

// connect keeps a node's connection (CONTRACT §6.2, §11; the platform's
// services/core/internal/sandbox/node/hub.go): the credential is checked
// before the upgrade (401), one connection per node (409), then the hello
// within 15 s, the welcome, and frames read with a 35 s deadline: each
// heartbeat is answered with a heartbeat_ack, each retention with a
// retention_ack. Anything else ends the connection.
func (c *Core) connect(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("node_id")
	if id == "" {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "node_id is missing")
		return
	}
	c.mu.Lock()
	n := c.nodeAuth(r, id)
	if n == nil {
		c.mu.Unlock()
		unauthorized(w)
		return
	}
	if c.conns[id] != nil {
		c.mu.Unlock()
		writeError(w, http.StatusConflict, CodeConnectionConflict, "this node is connected already")
		return
	}
	nc := &nodeConn{}
	c.conns[id] = nc // reserved until the handshake ends
	c.mu.Unlock()
	release := func() {
		c.mu.Lock()
		if c.conns[id] == nc {
			delete(c.conns, id)
			if n := c.node(id); n != nil {
				n.connected = false
			}
		}
		c.mu.Unlock()
	}
	ws, err := nodeproto.Accept(w, r)
	if err != nil {
		release()
		return
	}
	err = c.serveNode(nc, ws, id)
	// The slot is free before the node hears the close: a node that
	// reconnects at once is not told it is connected already.
	release()
	if err != nil && !errors.Is(err, nodeproto.ErrClosed) {
		ws.Close(nodeproto.ClosePolicyViolation, err.Error())
		return
	}
	ws.Close(nodeproto.CloseNormal, "")
}

// read reads the next frame within d.
func read(ws *nodeproto.Conn, d time.Duration) (*nodeproto.Frame, error) {
	ws.SetReadDeadline(time.Now().Add(d))
	msg, err := ws.ReadMessage()
	if err != nil {
		return nil, err
	}
	return nodeproto.Decode(msg)
}

func (c *Core) serveNode(nc *nodeConn, ws *nodeproto.Conn, id string) error {
	hello, err := read(ws, nodeproto.HelloTimeout)
	if err != nil {
		return err
	}
	if hello.Type != nodeproto.TypeHello {
		return fmt.Errorf("expected hello, not %s", hello.Type)
	}
	connID := uuid.NewString()
	c.mu.Lock()
	n := c.node(id)
	if n == nil || c.conns[id] != nc {
		c.mu.Unlock()
		return errors.New("the node was removed")
	}
	// hub.go sameBackend: everything but the capacity is the enrollment's.
	hi := hello.Identity
	if hi.NodeID != id || hi.InstallationID != c.state.InstallationID || hi.Provider != n.Provider || hi.BackendFingerprint != n.BackendFingerprint ||
		hi.DeploymentGeneration != n.DeploymentGeneration || hi.SpecificationDigest != n.SpecificationDigest {
		c.mu.Unlock()
		return errors.New("hello names another node")
	}
	nc.ws, nc.generationManagement = ws, hello.GenerationManagement
	n.connected = true
	c.recordHealth(n, *hello.Health)
	welcome := nodeproto.Frame{Type: nodeproto.TypeWelcome, ConnectionID: connID, OwnerEpoch: c.state.OwnerEpoch}
	if nc.generationManagement {
		welcome.Deployment = c.deploymentFor(n)
	}
	nc.send(welcome)
	epoch := c.state.OwnerEpoch
	c.mu.Unlock()
	var controlSequence uint64
	for {
		f, err := read(ws, nodeproto.ReadTimeout)
		if err != nil {
			return err
		}
		c.mu.Lock()
		n := c.node(id)
		if n == nil {
			c.mu.Unlock()
			return errors.New("the node was removed")
		}
		switch f.Type {
		case nodeproto.TypeHeartbeat:
			if f.ConnectionID != connID || f.OwnerEpoch != epoch {
				c.mu.Unlock()
				return errors.New("a heartbeat of another connection")
			}
			if !nc.generationManagement && f.Health.Generations != nil {
				c.mu.Unlock()
				return errors.New("generations from a node that does not manage them")
			}
			c.recordHealth(n, *f.Health)
			ack := nodeproto.Frame{Type: nodeproto.TypeHeartbeatAck, ConnectionID: connID, OwnerEpoch: epoch}
			if nc.generationManagement {
				ack.Deployment = c.deploymentFor(n)
			}
			nc.send(ack)
		case nodeproto.TypeRetention:
			ctl := f.Control
			if !nc.generationManagement || ctl.ConnectionID != connID || ctl.OwnerEpoch != epoch || ctl.Sequence != controlSequence+1 {
				c.mu.Unlock()
				return errors.New("a retention out of order or of another connection")
			}
			controlSequence = ctl.Sequence
			grants := []nodeproto.Retention{}
			for _, ref := range ctl.References {
				g := c.generation(ref.Generation)
				drop := g != nil && g.Dropped && g.Digest == ref.SpecificationDigest
				grants = append(grants, nodeproto.Retention{Generation: ref.Generation, SpecificationDigest: ref.SpecificationDigest, Keep: !drop})
			}
			nc.send(nodeproto.Frame{Type: nodeproto.TypeRetentionAck, Deployment: c.deploymentFor(n),
				Control: &nodeproto.Control{ID: ctl.ID, Sequence: ctl.Sequence, ConnectionID: connID, OwnerEpoch: epoch, Retentions: grants}})
		case nodeproto.TypeResponse:
			// The stand-in sends no requests: a response answers nothing.
			c.mu.Unlock()
			return errors.New("a response to no request")
		default:
			c.mu.Unlock()
			return fmt.Errorf("unexpected %s from a node", f.Type)
		}
		c.mu.Unlock()
	}
}

// recordHealth keeps a node's health and the generations it reports; a
// generation the node reports ready that is newer than the one it serves
// becomes its serving generation. Called with c.mu held.
func (c *Core) recordHealth(n *nodeRecord, h nodeproto.Health) {
	n.lastHeartbeat, n.health, n.observations = time.Now(), h, h.Generations
	for _, o := range h.Generations {
		if g := c.generation(o.Generation); o.State == nodeproto.StateReady && g != nil && g.Digest == o.SpecificationDigest && o.Generation > n.serving {
			n.serving = o.Generation
		}
	}
}

// deploymentFor is the deployment a generation-managing node is told.
// Called with c.mu held.
func (c *Core) deploymentFor(n *nodeRecord) *nodeproto.Deployment {
	g := c.target()
	serving := n.serving
	return &nodeproto.Deployment{Generation: g.Generation, SpecificationDigest: g.Digest, ServingGeneration: &serving}
}
