package console

import (
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// Prefix is the console route the handler serves.
const Prefix = "/node-install/"

// Handler serves the payload in payloadDir at /node-install/ for requests
// whose Host is originHost (the console origin's host[:port]; a default
// :443 is ignored on either side). Mount it so it sees the full request
// path, unmodified: not through http.StripPrefix, and not behind an
// http.ServeMux pattern, which would redirect unclean paths instead of
// letting the handler refuse them.
//
// Rules (CONTRACT §2.1): only GET and HEAD (405 with Allow: GET, HEAD);
// a foreign Host, or a path holding "\", NUL or "%" or not clean, is 404;
// the fixed names resolve under the active release (or the flat payload
// without active.json), /node-install/releases/<rev>/<name> under that
// release; artifacts/<filename> only for a declared catalog artifact,
// served when held and otherwise redirected (307) to the manifest's
// artifact_base_url when that is a usable https URL. Everything else is
// 404. Every response carries Cache-Control: no-store,
// X-Content-Type-Options: nosniff and Referrer-Policy: no-referrer; files
// are application/octet-stream and honour Range and If-Range.
func Handler(payloadDir, originHost string) http.Handler {
	return &handler{dir: payloadDir, host: normalizeHost(originHost), manifests: map[string]*release.Manifest{}}
}

type handler struct {
	dir  string
	host string

	mu        sync.Mutex
	manifests map[string]*release.Manifest // published releases are immutable
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if normalizeHost(r.Host) != h.host {
		http.NotFound(w, r)
		return
	}
	rel, ok := safePath(r)
	if !ok {
		http.NotFound(w, r)
		return
	}
	base, name, ok := h.route(rel)
	if !ok {
		http.NotFound(w, r)
		return
	}
	if base == "" {
		active, err := ReadActive(h.dir)
		if err != nil {
			http.Error(w, "payload unavailable", http.StatusInternalServerError)
			return
		}
		if active != "" {
			base = releasesDir + "/" + active
		} else {
			base = "."
		}
	}
	if file, ok := strings.CutPrefix(name, artifactsDir+"/"); ok {
		h.serveArtifact(w, r, base, file)
		return
	}
	h.serveFile(w, r, base+"/"+name, "", -1)
}

// route splits the path below /node-install/ into a release directory
// ("" for the active one) and a served name, or reports it unroutable.
func (h *handler) route(rel string) (base, name string, ok bool) {
	if rest, ok := strings.CutPrefix(rel, releasesDir+"/"); ok {
		commit, name, ok := strings.Cut(rest, "/")
		if !ok || !release.IsCommit(commit) {
			return "", "", false
		}
		base = releasesDir + "/" + commit
		rel = name
	}
	if release.IsFixedName(rel) {
		return base, rel, true
	}
	if file, ok := strings.CutPrefix(rel, artifactsDir+"/"); ok && release.CheckFileName(file) == nil {
		return base, rel, true
	}
	return "", "", false
}

// serveArtifact serves or redirects the artifact released as file in the
// release at base, if its manifest declares it for a catalog path.
func (h *handler) serveArtifact(w http.ResponseWriter, r *http.Request, base, file string) {
	m := h.manifest(base)
	if m == nil {
		http.NotFound(w, r)
		return
	}
	path, a, ok := m.ByFileName(file)
	if !ok || !release.InCatalog(path) {
		http.NotFound(w, r)
		return
	}
	rel := base + "/" + artifactsDir + "/" + file
	if _, err := os.Lstat(h.dir + "/" + rel); errors.Is(err, fs.ErrNotExist) {
		if m.ArtifactBaseURL == "" || release.CheckArtifactBaseURL(m.ArtifactBaseURL) != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Location", release.ArtifactURL(m.ArtifactBaseURL, file))
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	h.serveFile(w, r, rel, `"`+a.SHA256+`"`, a.Size)
}

// serveFile serves the payload file rel, opened without following links;
// a missing or unsafe file is 404. A non-empty etag is sent as the file's
// strong validator; a size of 0 or more must be the file's size.
func (h *handler) serveFile(w http.ResponseWriter, r *http.Request, rel, etag string, size int64) {
	root, err := safefile.OpenRoot(h.dir)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	f, err := root.OpenFile(rel, safefile.Expect{UID: safefile.AnyUID})
	root.Close()
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || size >= 0 && st.Size() != size {
		http.Error(w, "payload unavailable", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// manifest returns the parsed manifest of the release at base, or nil.
// Manifests of versioned releases are cached: a published release never
// changes.
func (h *handler) manifest(base string) *release.Manifest {
	cache := base != "."
	if cache {
		h.mu.Lock()
		m := h.manifests[base]
		h.mu.Unlock()
		if m != nil {
			return m
		}
	}
	root, err := safefile.OpenRoot(h.dir)
	if err != nil {
		return nil
	}
	defer root.Close()
	data, err := root.ReadFile(base+"/"+release.ManifestName, safefile.Expect{UID: safefile.AnyUID, MaxSize: release.MaxMetadataSize})
	if err != nil {
		return nil
	}
	m, err := release.ParseManifest(data)
	if err != nil || cache && base != releasesDir+"/"+m.SourceCommit {
		return nil
	}
	if cache {
		h.mu.Lock()
		h.manifests[base] = m
		h.mu.Unlock()
	}
	return m
}

// safePath returns the request path below /node-install/ if it is safe:
// no percent-encoding, backslash or NUL anywhere, clean, and naming a file.
func safePath(r *http.Request) (string, bool) {
	p := r.URL.Path
	if r.URL.RawPath != "" || strings.ContainsAny(r.URL.EscapedPath(), "%\\") || strings.ContainsAny(p, "%\\\x00") {
		return "", false
	}
	if path.Clean(p) != p {
		return "", false
	}
	rel, ok := strings.CutPrefix(p, Prefix)
	if !ok || rel == "" {
		return "", false
	}
	return rel, true
}

// normalizeHost lowercases a host[:port] and drops a default :443.
func normalizeHost(h string) string {
	h = strings.ToLower(h)
	if host, port, err := net.SplitHostPort(h); err == nil && port == "443" {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return h
}
