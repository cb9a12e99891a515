package dockertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/record/image"
)

// Info is the part of /info the fake answers.
type Info struct {
	NCPU            int
	MemTotal        int64
	MemoryLimit     bool
	CPUCfsQuota     bool `json:"CpuCfsQuota"`
	CgroupVersion   string
	SecurityOptions []string
	ServerVersion   string
}

// Image is an image the fake engine holds.
type Image struct {
	ID           string
	OS           string
	Architecture string
}

// Network is a network the fake engine holds.
type Network struct {
	ID     string
	Name   string
	Driver string
	Labels map[string]string
}

// Container is a container the fake engine holds.
type Container struct {
	ID     string
	Names  []string
	Image  string
	State  string
	Labels map[string]string
}

// Engine is a fake Docker Engine. Exported fields may be set before the
// first request.
type Engine struct {
	// Host is the engine's address, unix://<socket>, for docker.New.
	Host string
	// APIVersion is what /_ping announces (default "1.41", Docker 20.10).
	APIVersion string
	// ContainerdStore makes loaded images take their manifest digest as ID.
	ContainerdStore bool
	// DuplicateNetworks makes /networks/create accept an existing name
	// with a warning, as engines before API 1.44 do when not asked to
	// check for duplicates; otherwise it answers 409.
	DuplicateNetworks bool

	mu         sync.Mutex
	info       Info
	images     map[string]Image
	networks   []Network
	containers []Container
	failures   map[string]int
	requests   []string
	loads      int
	srv        *http.Server
}

// Start serves a fake engine on a socket in a new temporary directory and
// stops it when the test ends.
func Start(t testing.TB) *Engine {
	t.Helper()
	// Unix socket paths are limited to 108 bytes: t.TempDir() can exceed it.
	dir, err := os.MkdirTemp("", "dockertest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e := New()
	sock := filepath.Join(dir, "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	e.Host = "unix://" + sock
	e.srv = &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	go e.srv.Serve(ln)
	t.Cleanup(func() { e.Stop() })
	return e
}

// New returns an engine not yet serving, for use as an http.Handler.
func New() *Engine {
	return &Engine{
		APIVersion: "1.41",
		info: Info{NCPU: 4, MemTotal: 8 << 30, MemoryLimit: true, CPUCfsQuota: true,
			CgroupVersion: "2", ServerVersion: "20.10.24"},
		images:   map[string]Image{},
		failures: map[string]int{},
	}
}

// Stop stops serving; later calls find nothing listening on the socket.
func (e *Engine) Stop() {
	if e.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.srv.Shutdown(ctx)
	}
}

// SetInfo replaces what /info answers.
func (e *Engine) SetInfo(i Info) { e.mu.Lock(); e.info = i; e.mu.Unlock() }

// AddImage makes the engine hold img.
func (e *Engine) AddImage(img Image) { e.mu.Lock(); e.images[img.ID] = img; e.mu.Unlock() }

// Images returns the images held.
func (e *Engine) Images() []Image {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Image
	for _, i := range e.images {
		out = append(out, i)
	}
	return out
}

// Loads counts the /images/load requests served.
func (e *Engine) Loads() int { e.mu.Lock(); defer e.mu.Unlock(); return e.loads }

// AddContainer makes the engine hold c.
func (e *Engine) AddContainer(c Container) {
	e.mu.Lock()
	e.containers = append(e.containers, c)
	e.mu.Unlock()
}

// AddNetwork makes the engine hold n (an ID is made up if empty).
func (e *Engine) AddNetwork(n Network) {
	e.mu.Lock()
	if n.ID == "" {
		n.ID = randomID()
	}
	e.networks = append(e.networks, n)
	e.mu.Unlock()
}

// Networks returns the networks held.
func (e *Engine) Networks() []Network {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Network(nil), e.networks...)
}

// Fail makes every request whose method and unversioned path start with
// route (for example "POST /images/load") answer status with an error
// message, until Fail(route, 0).
func (e *Engine) Fail(route string, status int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if status == 0 {
		delete(e.failures, route)
		return
	}
	e.failures[route] = status
}

// Requests returns "METHOD path" of every request served, as sent
// (with the API version prefix).
func (e *Engine) Requests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.requests...)
}

var versionPrefix = regexp.MustCompile(`^/v[0-9]+\.[0-9]+/`)

// ServeHTTP answers one API request.
func (e *Engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.requests = append(e.requests, r.Method+" "+r.URL.Path)
	p := r.URL.Path
	if loc := versionPrefix.FindStringIndex(p); loc != nil {
		p = p[loc[1]-1:]
	}
	route := r.Method + " " + p
	for prefix, status := range e.failures {
		if strings.HasPrefix(route, prefix) {
			e.mu.Unlock()
			apiError(w, status, fmt.Sprintf("fake failure of %s", prefix))
			return
		}
	}
	e.mu.Unlock()

	switch {
	case p == "/_ping" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		w.Header().Set("Api-Version", e.APIVersion)
		w.Header().Set("Ostype", "linux")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if r.Method == http.MethodGet {
			io.WriteString(w, "OK")
		}
	case p == "/info" && r.Method == http.MethodGet:
		e.mu.Lock()
		info := e.info
		e.mu.Unlock()
		writeJSON(w, http.StatusOK, info)
	case strings.HasPrefix(p, "/images/") && strings.HasSuffix(p, "/json") && r.Method == http.MethodGet:
		e.inspectImage(w, strings.TrimSuffix(strings.TrimPrefix(p, "/images/"), "/json"))
	case p == "/images/load" && r.Method == http.MethodPost:
		e.loadImage(w, r)
	case p == "/networks/create" && r.Method == http.MethodPost:
		e.createNetwork(w, r)
	case strings.HasPrefix(p, "/networks/") && r.Method == http.MethodGet:
		e.inspectNetwork(w, strings.TrimPrefix(p, "/networks/"))
	case strings.HasPrefix(p, "/networks/") && r.Method == http.MethodDelete:
		e.removeNetwork(w, strings.TrimPrefix(p, "/networks/"))
	case p == "/containers/json" && r.Method == http.MethodGet:
		e.listContainers(w, r)
	default:
		apiError(w, http.StatusNotFound, "page not found")
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"message": msg})
}

func randomID() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (e *Engine) inspectImage(w http.ResponseWriter, ref string) {
	e.mu.Lock()
	img, ok := e.images[ref]
	e.mu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "No such image: "+ref)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"Id": img.ID, "Os": img.OS, "Architecture": img.Architecture})
}

func (e *Engine) loadImage(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.loads++
	e.mu.Unlock()
	id, err := image.IdentifyStream(r.Body)
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	if err != nil {
		// The engine reports a failed load inside the progress stream.
		enc.Encode(map[string]any{"errorDetail": map[string]string{"message": err.Error()}, "error": err.Error()})
		return
	}
	img := Image{ID: id.ConfigDigest, OS: "linux", Architecture: "amd64"}
	if e.ContainerdStore {
		img.ID = id.ManifestDigest
	}
	e.AddImage(img)
	enc.Encode(map[string]string{"stream": "Loaded image ID: " + img.ID + "\n"})
}

// findNetwork resolves a network the way the engine does: full ID, exact
// name, then unique ID prefix. Call with e.mu held.
func (e *Engine) findNetwork(ref string) (int, error) {
	match := -1
	for i, n := range e.networks {
		if n.ID == ref {
			return i, nil
		}
	}
	for i, n := range e.networks {
		if n.Name == ref {
			if match >= 0 {
				return -1, fmt.Errorf("network %s is ambiguous", ref)
			}
			match = i
		}
	}
	if match >= 0 {
		return match, nil
	}
	for i, n := range e.networks {
		if strings.HasPrefix(n.ID, ref) {
			return i, nil
		}
	}
	return -1, errNoNetwork
}

var errNoNetwork = errors.New("no such network")

func (e *Engine) inspectNetwork(w http.ResponseWriter, ref string) {
	e.mu.Lock()
	i, err := e.findNetwork(ref)
	var n Network
	if err == nil {
		n = e.networks[i]
	}
	e.mu.Unlock()
	switch {
	case errors.Is(err, errNoNetwork):
		apiError(w, http.StatusNotFound, "network "+ref+" not found")
	case err != nil:
		apiError(w, http.StatusBadRequest, err.Error())
	default:
		writeJSON(w, http.StatusOK, map[string]any{"Name": n.Name, "Id": n.ID, "Driver": n.Driver, "Labels": n.Labels, "Scope": "local"})
	}
}

func (e *Engine) createNetwork(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name           string
		Driver         string
		Labels         map[string]string
		CheckDuplicate bool
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Name == "" {
		apiError(w, http.StatusBadRequest, "bad network create request")
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	warning := ""
	for _, n := range e.networks {
		if n.Name == req.Name {
			if !e.DuplicateNetworks || req.CheckDuplicate {
				apiError(w, http.StatusConflict, "network with name "+req.Name+" already exists")
				return
			}
			warning = fmt.Sprintf("Network with name %s (id : %s) already exists", n.Name, n.ID)
		}
	}
	if req.Driver == "" {
		req.Driver = "bridge"
	}
	n := Network{ID: randomID(), Name: req.Name, Driver: req.Driver, Labels: req.Labels}
	e.networks = append(e.networks, n)
	writeJSON(w, http.StatusCreated, map[string]string{"Id": n.ID, "Warning": warning})
}

func (e *Engine) removeNetwork(w http.ResponseWriter, ref string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	i, err := e.findNetwork(ref)
	switch {
	case errors.Is(err, errNoNetwork):
		apiError(w, http.StatusNotFound, "network "+ref+" not found")
	case err != nil:
		apiError(w, http.StatusBadRequest, err.Error())
	default:
		e.networks = append(e.networks[:i], e.networks[i+1:]...)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (e *Engine) listContainers(w http.ResponseWriter, r *http.Request) {
	var filters map[string]map[string]bool
	if f := r.URL.Query().Get("filters"); f != "" {
		if err := json.Unmarshal([]byte(f), &filters); err != nil {
			apiError(w, http.StatusBadRequest, "bad filters")
			return
		}
	}
	all := r.URL.Query().Get("all") == "1"
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []map[string]any{}
	for _, c := range e.containers {
		if !all && c.State != "running" {
			continue
		}
		if !matchLabels(c.Labels, filters["label"]) {
			continue
		}
		out = append(out, map[string]any{"Id": c.ID, "Names": c.Names, "Image": c.Image, "State": c.State, "Labels": c.Labels})
	}
	writeJSON(w, http.StatusOK, out)
}

// matchLabels applies label filters: "key" (present) or "key=value".
func matchLabels(labels map[string]string, want map[string]bool) bool {
	for f := range want {
		k, v, hasValue := strings.Cut(f, "=")
		got, ok := labels[k]
		if !ok || (hasValue && got != v) {
			return false
		}
	}
	return true
}
