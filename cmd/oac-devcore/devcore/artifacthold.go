package devcore

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// ArtifactHold holds artifact downloads so that a test can watch a
// transfer in progress, or interrupt it. While paused, a GET of an
// artifact (a console path with an artifacts/ element, or any file of the
// release host) that starts sends its headers and the first half of its
// body, flushes them, and waits until Resume or until the client goes
// away; then it sends the rest. Requests that started before Pause are not
// held, and each request is held at most once.
type ArtifactHold struct {
	mu      sync.Mutex
	paused  bool
	resumed chan struct{} // closed by Resume; a new one on Pause
	held    int
	ranged  int
}

// ArtifactHoldView is GET /core/v1/devcore/artifacts: whether new artifact
// downloads are held, how many are waiting now, and how many artifact
// requests asked for a range (a download that resumed a part file).
type ArtifactHoldView struct {
	Paused bool `json:"paused"`
	Held   int  `json:"held"`
	Ranged int  `json:"ranged"`
}

// Pause holds the artifact downloads that start from now on.
func (h *ArtifactHold) Pause() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.paused {
		h.paused, h.resumed = true, make(chan struct{})
	}
}

// Resume lets every held download continue and holds no new one.
func (h *ArtifactHold) Resume() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.paused {
		h.paused = false
		close(h.resumed)
	}
}

// View is the hold's state.
func (h *ArtifactHold) View() ArtifactHoldView {
	h.mu.Lock()
	defer h.mu.Unlock()
	return ArtifactHoldView{Paused: h.paused, Held: h.held, Ranged: h.ranged}
}

// gate counts an artifact request and returns the channel it waits on, or
// nil when downloads are not held.
func (h *ArtifactHold) gate(r *http.Request) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Header.Get("Range") != "" {
		h.ranged++
	}
	if !h.paused {
		return nil
	}
	return h.resumed
}

func (h *ArtifactHold) wait(r *http.Request, gate chan struct{}) bool {
	h.mu.Lock()
	h.held++
	h.mu.Unlock()
	defer func() { h.mu.Lock(); h.held--; h.mu.Unlock() }()
	select {
	case <-gate:
		return true
	case <-r.Context().Done():
		return false
	}
}

// isArtifact reports whether the request path names an artifact.
func isArtifact(path string) bool {
	return strings.Contains(path, "/artifacts/") || strings.HasPrefix(path, releaseHostPrefix)
}

// Wrap returns next with the hold applied to its artifact downloads.
func (h *ArtifactHold) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !isArtifact(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		gate := h.gate(r)
		if gate == nil {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&holdingWriter{ResponseWriter: w, h: h, r: r, gate: gate, limit: -1}, r)
	})
}

// holdingWriter passes a response through and waits once, after the first
// half of a successful body.
type holdingWriter struct {
	http.ResponseWriter
	h       *ArtifactHold
	r       *http.Request
	gate    chan struct{}
	status  int
	limit   int64 // bytes before the wait; -1 until the first Write
	written int64
	done    bool // waited (or will not)
}

func (w *holdingWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *holdingWriter) Write(p []byte) (int, error) {
	if w.done {
		return w.ResponseWriter.Write(p)
	}
	if w.limit < 0 {
		if w.status == 0 {
			w.status = http.StatusOK
		}
		n, err := strconv.ParseInt(w.Header().Get("Content-Length"), 10, 64)
		if w.status != http.StatusOK && w.status != http.StatusPartialContent || err != nil || n < 0 {
			w.done = true
			return w.ResponseWriter.Write(p)
		}
		w.limit = n / 2
	}
	if w.written+int64(len(p)) <= w.limit {
		n, err := w.ResponseWriter.Write(p)
		w.written += int64(n)
		return n, err
	}
	first := int(w.limit - w.written)
	n, err := w.ResponseWriter.Write(p[:first])
	w.written += int64(n)
	if err != nil {
		return n, err
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	w.done = true
	if !w.h.wait(w.r, w.gate) {
		return n, http.ErrAbortHandler
	}
	m, err := w.ResponseWriter.Write(p[first:])
	return n + m, err
}

// holdRoutes registers the hold's admin routes on mux, behind the admin
// key.
func (s *Server) holdRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /core/v1/devcore/artifacts", s.Core.admin(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Hold.View())
	}))
	mux.HandleFunc("POST /core/v1/devcore/artifacts/pause", s.Core.admin(func(w http.ResponseWriter, r *http.Request) {
		s.Hold.Pause()
		writeJSON(w, http.StatusOK, s.Hold.View())
	}))
	mux.HandleFunc("POST /core/v1/devcore/artifacts/resume", s.Core.admin(func(w http.ResponseWriter, r *http.Request) {
		s.Hold.Resume()
		writeJSON(w, http.StatusOK, s.Hold.View())
	}))
}
