package devcore

import (
	"net/http"
	"time"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/nodeproto"
)

// NodeView is a node as GET /core/v1/sandbox/nodes[/{id}] shows it.
type NodeView struct {
	NodeID               string      `json:"node_id"`
	Name                 string      `json:"name"`
	Provider             string      `json:"provider"`
	DeploymentGeneration int64       `json:"deployment_generation"`
	SpecificationDigest  string      `json:"specification_digest"`
	MaxActive            int64       `json:"max_active"`
	MaxRetained          int64       `json:"max_retained"`
	Connected            bool        `json:"connected"`
	Online               bool        `json:"online"`
	ProviderReady        bool        `json:"provider_ready"`
	Diagnostic           string      `json:"diagnostic"`
	LastHeartbeatAt      string      `json:"last_heartbeat_at,omitempty"`
	Rollout              RolloutView `json:"rollout"`
}

// RolloutView is a node's view of the deployment's generations.
type RolloutView struct {
	TargetGeneration  int64                   `json:"target_generation"`
	ServingGeneration int64                   `json:"serving_generation"`
	Diagnostic        string                  `json:"diagnostic"`
	Generations       []nodeproto.Observation `json:"generations"`
}

// view is n as the admin routes show it. Called with c.mu held.
func (c *Core) view(n *nodeRecord) NodeView {
	v := NodeView{
		NodeID: n.NodeID, Name: n.Name, Provider: n.Provider, DeploymentGeneration: n.DeploymentGeneration,
		SpecificationDigest: n.SpecificationDigest, MaxActive: n.MaxActive, MaxRetained: n.MaxRetained,
		Connected: n.connected, Online: n.connected && time.Since(n.lastHeartbeat) < nodeproto.OnlineWindow,
		Rollout: RolloutView{TargetGeneration: c.state.Target, ServingGeneration: n.serving, Generations: []nodeproto.Observation{}},
	}
	if !n.lastHeartbeat.IsZero() {
		v.LastHeartbeatAt = n.lastHeartbeat.UTC().Format(time.RFC3339)
		v.ProviderReady = v.Online && n.health.ProviderReady
		v.Diagnostic = n.health.Diagnostic
	}
	if !v.Online {
		v.Diagnostic = "node_offline"
	}
	for _, o := range n.observations {
		v.Rollout.Generations = append(v.Rollout.Generations, o)
		if o.Generation == c.state.Target && o.State == nodeproto.StateFailed {
			v.Rollout.Diagnostic = o.Diagnostic
		}
	}
	return v
}

func (c *Core) listNodes(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	nodes := []NodeView{}
	for _, n := range c.state.Nodes {
		nodes = append(nodes, c.view(n))
	}
	writeJSON(w, http.StatusOK, map[string]any{"nodes": nodes})
}

func (c *Core) getNode(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.node(r.PathValue("id"))
	if n == nil {
		writeError(w, http.StatusNotFound, CodeNotFound, "no such node")
		return
	}
	writeJSON(w, http.StatusOK, c.view(n))
}

// removeNode forgets a node: its credential is refused from then on (401
// on every /api/v1/sandbox-node route) and its connection is closed. The
// stand-in runs no sandboxes, so the platform's 409 for a node that holds
// some never happens here.
func (c *Core) removeNode(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := r.PathValue("id")
	for i, n := range c.state.Nodes {
		if n.NodeID != id {
			continue
		}
		c.state.Nodes = append(c.state.Nodes[:i:i], c.state.Nodes[i+1:]...)
		if err := c.save(); err != nil {
			c.state.Nodes = append(c.state.Nodes[:i:i], append([]*nodeRecord{n}, c.state.Nodes[i:]...)...)
			writeError(w, http.StatusServiceUnavailable, "runtime_node_unavailable", "storage failed")
			return
		}
		if nc := c.conns[id]; nc != nil {
			delete(c.conns, id)
			if nc.ws != nil {
				nc.ws.Close(nodeproto.CloseRemoved, "node removed")
			}
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeError(w, http.StatusNotFound, CodeNotFound, "no such node")
}
