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

// send writes a message to the node; a failing connection is closed (the
// node reconnects). Called with c.mu held.
func (nc *nodeConn) send(v any) {
	if nc.ws == nil {
		return
	}
	if err := nc.ws.Send(v); err != nil {
		nc.ws.Close(nodeproto.CloseNormal, "write failed")
	}
}

// connect keeps a node's connection (CONTRACT §6.2): the credential is
// checked before the upgrade (401), one connection per node (409), then
// hello within 15 s, welcome, and heartbeats with a 35 s read timeout.
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
	defer func() {
		c.mu.Lock()
		if c.conns[id] == nc {
			delete(c.conns, id)
			if n := c.node(id); n != nil {
				n.connected = false
			}
		}
		c.mu.Unlock()
	}()
	ws, err := nodeproto.Accept(w, r)
	if err != nil {
		return
	}
	defer ws.Close(nodeproto.CloseNormal, "")
	if err := c.serveNode(nc, ws, id); err != nil && !errors.Is(err, nodeproto.ErrClosed) {
		ws.Close(nodeproto.ClosePolicyViolation, err.Error())
	}
}

func (c *Core) serveNode(nc *nodeConn, ws *nodeproto.Conn, id string) error {
	ws.SetReadDeadline(time.Now().Add(nodeproto.HelloTimeout))
	msg, err := ws.ReadMessage()
	if err != nil {
		return err
	}
	var hello nodeproto.Hello
	if err := nodeproto.Decode(msg, &hello); err != nil {
		return err
	}
	if hello.Type != nodeproto.TypeHello || hello.ProtocolVersion != nodeproto.ProtocolVersion {
		return fmt.Errorf("expected hello of protocol %d", nodeproto.ProtocolVersion)
	}
	c.mu.Lock()
	n := c.node(id)
	if n == nil || c.conns[id] != nc {
		c.mu.Unlock()
		return errors.New("the node was removed")
	}
	if hello.Identity.NodeID != id || hello.Identity.InstallationID != c.state.InstallationID || hello.Identity.Provider != n.Provider {
		c.mu.Unlock()
		return errors.New("hello names another node")
	}
	c.epoch++
	nc.ws, nc.generationManagement = ws, hello.GenerationManagement
	n.connected, n.lastHeartbeat, n.health = true, time.Now(), hello.Health
	welcome := nodeproto.Welcome{Type: nodeproto.TypeWelcome, ConnectionID: uuid.NewString(), OwnerEpoch: c.epoch}
	if nc.generationManagement {
		welcome.Deployment = c.deploymentFor(n)
	}
	nc.send(welcome)
	c.mu.Unlock()
	for {
		ws.SetReadDeadline(time.Now().Add(nodeproto.ReadTimeout))
		msg, err := ws.ReadMessage()
		if err != nil {
			return err
		}
		var hb nodeproto.Heartbeat
		if err := nodeproto.Decode(msg, &hb); err != nil {
			return err
		}
		if hb.Type != nodeproto.TypeHeartbeat || len(hb.Generations) > nodeproto.MaxObservations {
			return errors.New("expected a heartbeat with at most 8 generation observations")
		}
		c.mu.Lock()
		if n := c.node(id); n != nil {
			n.lastHeartbeat, n.health, n.observations = time.Now(), hb.Health, hb.Generations
			for _, o := range hb.Generations {
				if g := c.generation(o.Generation); o.State == nodeproto.StateReady && g != nil && g.Digest == o.SpecificationDigest && o.Generation > n.serving {
					n.serving = o.Generation
				}
			}
		}
		c.mu.Unlock()
	}
}

// deploymentFor is the deployment a generation-managing node is told.
// Called with c.mu held.
func (c *Core) deploymentFor(n *nodeRecord) *nodeproto.Deployment {
	g := c.target()
	return &nodeproto.Deployment{Generation: g.Generation, SpecificationDigest: g.Digest, ServingGeneration: n.serving}
}
