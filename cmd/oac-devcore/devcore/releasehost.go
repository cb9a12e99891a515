package devcore

import (
	"net/http"
	"os"
	"path"
	"strings"
)

// releaseHostPrefix is where the release host serves versioned release
// directories: /oac/build-<source_commit>/<file name>.
const releaseHostPrefix = "/oac/"

// releaseHost serves the files it holds, each at one fixed path, the way a
// release download host does: GET and HEAD, Range, a strong ETag.
type releaseHost struct {
	files map[string]hostedFile // URL path -> file
}

type hostedFile struct {
	path   string
	sha256 string
}

func (h *releaseHost) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	hf, ok := h.files[p]
	if !ok || r.URL.RawPath != "" || path.Clean(p) != p || strings.ContainsAny(p, "\\\x00") {
		http.NotFound(w, r)
		return
	}
	f, err := os.Open(hf.path)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		http.Error(w, "unavailable", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("ETag", `"`+hf.sha256+`"`)
	http.ServeContent(w, r, "", st.ModTime(), f)
}
