package devcore

import (
	"fmt"
	"net/http"
	"strconv"
)

// GenerationView is one generation of the deployment.
type GenerationView struct {
	Generation          int64  `json:"generation"`
	SpecificationDigest string `json:"specification_digest"`
	SourceCommit        string `json:"source_commit"`
	Dropped             bool   `json:"dropped"`
}

// DeploymentView is GET /core/v1/sandbox/deployment.
type DeploymentView struct {
	InstallationID   string           `json:"installation_id"`
	Provider         string           `json:"provider"`
	TargetGeneration int64            `json:"target_generation"`
	Generations      []GenerationView `json:"generations"`
}

func (c *Core) generationView(g *generationInfo) GenerationView {
	return GenerationView{g.Generation, g.Digest, g.spec.Runtime.SourceCommit, g.Dropped}
}

func (c *Core) getDeployment(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := DeploymentView{InstallationID: c.state.InstallationID, Provider: c.state.Provider, TargetGeneration: c.state.Target, Generations: []GenerationView{}}
	for _, g := range c.state.Generations {
		v.Generations = append(v.Generations, c.generationView(g))
	}
	writeJSON(w, http.StatusOK, v)
}

// publishGeneration builds and publishes a new Runtime release and makes
// it generation N+1, the target: the configuration answers it and every
// connected generation-managing node learns it from the deployment of its
// next heartbeat_ack (the platform's Core sends nothing unasked).
func (c *Core) publishGeneration(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := c.state.Target + 1
	spec, err := c.publish(next, c.state.Provider)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "release_unavailable", fmt.Sprintf("build the release of generation %d: %v", next, err))
		return
	}
	prev := c.state.Target
	g, err := c.addGeneration(spec)
	if err == nil {
		err = c.save()
	}
	if err != nil {
		c.state.Generations = c.state.Generations[:len(c.state.Generations)-1]
		c.state.Target = prev
		writeError(w, http.StatusServiceUnavailable, "runtime_node_unavailable", "storage failed")
		return
	}
	writeJSON(w, http.StatusCreated, c.generationView(g))
}

// dropGeneration grants the collection of an old generation: it is never
// served again, and a generation-managing node that names it in a
// retention is answered keep false, its grant to collect it. The target, and a generation a node still serves, are
// refused (409).
func (c *Core) dropGeneration(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	want, err := strconv.ParseInt(r.PathValue("generation"), 10, 64)
	g := c.generation(want)
	if err != nil || g == nil {
		writeError(w, http.StatusNotFound, CodeNotFound, "no such generation")
		return
	}
	if want == c.state.Target {
		writeError(w, http.StatusConflict, CodeSpecificationMismatch, "the target generation cannot be dropped")
		return
	}
	for _, n := range c.state.Nodes {
		if n.serving == want && n.connected {
			writeError(w, http.StatusConflict, CodeSpecificationMismatch, fmt.Sprintf("node %s still serves generation %d", n.NodeID, want))
			return
		}
	}
	if !g.Dropped {
		g.Dropped = true
		if err := c.save(); err != nil {
			g.Dropped = false
			writeError(w, http.StatusServiceUnavailable, "runtime_node_unavailable", "storage failed")
			return
		}
	}
	writeJSON(w, http.StatusOK, c.generationView(g))
}
