package devcore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/console"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// DefaultListen is the console's default listen address.
const DefaultListen = "127.0.0.1:8443"

// Config configures a development console.
type Config struct {
	// DataDir holds the CA, the build and the payload; created 0700.
	DataDir string
	// Listen is the console's HTTPS listen address (DefaultListen if empty;
	// port 0 picks a free port).
	Listen string
	// ReleaseHostListen, if set, starts a second HTTPS server, the release
	// host, that alone holds the Runtime image archive.
	ReleaseHostListen string
	// Fixture chooses the fixture release's inputs; its ReleaseHost is set
	// by Start.
	Fixture FixtureOptions
	// Provider is the provider of the installation's nodes (Core's
	// deployment): release.ProviderDocker (the default) or
	// release.ProviderMicrosandbox.
	Provider string
	// Log receives server errors (TLS handshakes, for example); nil
	// discards them.
	Log io.Writer
}

// Server is a running development console.
type Server struct {
	// URL is the console origin, https://host:port. /node-install/ answers
	// only requests whose Host is this host:port (CONTRACT §2.1), so use
	// it as printed: 127.0.0.1 and localhost are different origins.
	URL string
	// ReleaseHostURL is the release host's origin, or "".
	ReleaseHostURL string
	// CA signed both servers' certificates; CA.CertPath is the file
	// clients trust.
	CA *CA
	// PayloadDir is the console payload directory.
	PayloadDir string
	// Fixture is the published, active release.
	Fixture *Fixture
	// Core is the stand-in for Core's node and admin routes.
	Core *Core
	// Hold holds artifact downloads on request (tests).
	Hold *ArtifactHold

	mu      sync.RWMutex
	routes  []route
	servers []*http.Server
	done    []chan error
}

type route struct {
	prefix string
	h      http.Handler
}

// Start builds the fixture release in cfg.DataDir, publishes it (adding
// nothing if an equal release is there already), makes it the active
// release (switching from another one a previous start left active),
// and serves it over HTTPS until Close.
func Start(cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("start development console: no data directory")
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("start development console: %w", err)
	}
	ca, err := LoadOrCreateCA(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("start development console: %w", err)
	}
	s := &Server{CA: ca, PayloadDir: filepath.Join(cfg.DataDir, "node-payload"), Hold: &ArtifactHold{}}
	ok := false
	var listeners []net.Listener
	defer func() {
		if !ok {
			for _, l := range listeners {
				l.Close()
			}
		}
	}()
	ln, host, err := listen(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("start development console: %w", err)
	}
	listeners = append(listeners, ln)
	s.URL = "https://" + host
	var hostLn net.Listener
	if cfg.ReleaseHostListen != "" {
		var rhost string
		if hostLn, rhost, err = listen(cfg.ReleaseHostListen); err != nil {
			return nil, fmt.Errorf("start development console: release host: %w", err)
		}
		listeners = append(listeners, hostLn)
		s.ReleaseHostURL = "https://" + rhost
		cfg.Fixture.ReleaseHost = rhost
	}

	// The first release's Runtime image names this Core's installation
	// (RunLabel), as a later generation's does: the image is this
	// console's, and a test removes only its own console's images from a
	// shared Docker Engine.
	id, err := StoredInstallationID(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("start development console: %w", err)
	}
	if cfg.Fixture.Label == "" {
		cfg.Fixture.Label = RunLabel(id)
	}
	fx, err := BuildFixture(filepath.Join(cfg.DataDir, "build"), cfg.Fixture)
	if err != nil {
		return nil, fmt.Errorf("start development console: %w", err)
	}
	s.Fixture = fx
	if err := console.Publish(s.PayloadDir, fx.Files); err != nil {
		return nil, fmt.Errorf("start development console: %w", err)
	}
	if err := console.Switch(s.PayloadDir, fx.SourceCommit); err != nil {
		return nil, fmt.Errorf("start development console: %w", err)
	}
	s.Handle(console.Prefix, s.Hold.Wrap(console.Handler(s.PayloadDir, host)))
	if cfg.Provider == "" {
		cfg.Provider = release.ProviderDocker
	}
	spec1, err := fx.Specification(cfg.Provider)
	if err != nil {
		return nil, fmt.Errorf("start development console: %w", err)
	}
	s.Core, err = newCore(cfg.DataDir, s.URL, cfg.Provider, id, spec1, s.generationPublisher(cfg))
	if err != nil {
		return nil, fmt.Errorf("start development console: %w", err)
	}
	mux := http.NewServeMux()
	s.Core.Routes(mux)
	s.holdRoutes(mux)
	s.Handle("/api/v1/", mux)
	s.Handle("/core/v1/", mux)

	errLog := log.New(logw, "oac-devcore: ", 0)
	if err := s.serve(ln, host, s, errLog); err != nil {
		return nil, err
	}
	if hostLn != nil {
		rh, err := s.releaseHost(filepath.Join(cfg.DataDir, "release-host"), fx)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("start development console: %w", err)
		}
		if err := s.serve(hostLn, strings.TrimPrefix(s.ReleaseHostURL, "https://"), s.Hold.Wrap(rh), errLog); err != nil {
			s.Close()
			return nil, err
		}
	}
	// Last: the admin client (oac-devcore admin) finds a running console
	// by this file.
	if err := safefile.AtomicWrite(filepath.Join(cfg.DataDir, URLFileName), []byte(s.URL+"\n"), 0o644); err != nil {
		s.Close()
		return nil, fmt.Errorf("start development console: %w", err)
	}
	ok = true
	return s, nil
}

// RunLabel is the io.oac.fixture label of the first release's Runtime
// image of the installation id: "oac-devcore installation <id>". Later
// generations' labels end in "of installation <id>" (generationPublisher).
func RunLabel(id string) string { return "oac-devcore installation " + id }

// URLFileName holds the running console's origin in the data directory.
const URLFileName = "url"

// generationPublisher returns the function that builds the Runtime
// release of a later generation (its own image label, so its own
// identities and source commit), publishes it beside the active release
// (which stays active) and returns its specification. The label names the
// installation too, so an image another installation on the same Docker
// Engine prepared (or left behind) is never this generation's: its node
// downloads and imports it. The Core calls it with its mutex held.
func (s *Server) generationPublisher(cfg Config) func(int64, string) (*release.Specification, error) {
	return func(g int64, provider string) (*release.Specification, error) {
		opts := cfg.Fixture
		opts.ReleaseHost = "" // the console holds a later release's artifacts
		opts.Label = fmt.Sprintf("oac-devcore generation %d of installation %s", g, s.Core.state.InstallationID)
		fx, err := BuildFixture(filepath.Join(cfg.DataDir, fmt.Sprintf("build-generation-%d", g)), opts)
		if err != nil {
			return nil, err
		}
		if err := console.Publish(s.PayloadDir, fx.Files); err != nil {
			return nil, err
		}
		return fx.Specification(provider)
	}
}

// listen listens on addr and returns the host:port clients use: the
// loopback address when addr names no host or an unspecified one.
func listen(addr string) (net.Listener, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	host, _, _ := net.SplitHostPort(addr)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return ln, net.JoinHostPort(host, port), nil
}

// serve starts an HTTPS/1.1 server for h on ln with a certificate for host.
func (s *Server) serve(ln net.Listener, host string, h http.Handler, errLog *log.Logger) error {
	name, _, _ := net.SplitHostPort(host)
	tc, err := s.CA.ServerConfig(name)
	if err != nil {
		return fmt.Errorf("start development console: %w", err)
	}
	srv := &http.Server{
		Handler:           h,
		TLSConfig:         tc,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          errLog,
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){}, // HTTP/1.1 only
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(tls.NewListener(ln, tc)) }()
	s.mu.Lock()
	s.servers = append(s.servers, srv)
	s.done = append(s.done, done)
	s.mu.Unlock()
	return nil
}

// releaseHost places the fixture's remote artifacts under dir and returns
// the handler serving them.
func (s *Server) releaseHost(dir string, fx *Fixture) (http.Handler, error) {
	rh := &releaseHost{files: map[string]hostedFile{}}
	base := strings.TrimPrefix(fx.Manifest.ArtifactBaseURL, s.ReleaseHostURL)
	vdir := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(base, "/")))
	if err := os.MkdirAll(vdir, 0o700); err != nil {
		return nil, err
	}
	for name, src := range fx.Remote {
		dst := filepath.Join(vdir, name)
		if _, err := os.Lstat(dst); errors.Is(err, os.ErrNotExist) {
			if err := copyFile(src, dst); err != nil {
				return nil, err
			}
		}
		_, a, _ := fx.Manifest.ByFileName(name)
		rh.files[base+"/"+name] = hostedFile{path: dst, sha256: a.SHA256}
	}
	return rh, nil
}

// copyFile copies src to a new file dst through a temporary file.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	root, err := safefile.OpenRootTrusted(filepath.Dir(dst))
	if err != nil {
		return err
	}
	defer root.Close()
	tmp, err := root.OpenPending("."+filepath.Base(dst)+".tmp", "devcore")
	if err != nil {
		return err
	}
	err = tmp.File().Truncate(0)
	if err == nil {
		_, err = io.CopyBuffer(tmp.File(), in, make([]byte, 1<<20))
	}
	if err == nil {
		err = tmp.Commit(filepath.Base(dst), 0o600)
	}
	if err != nil {
		tmp.Discard()
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return nil
}

// Handle serves requests whose path starts with prefix through h; the
// longest matching prefix wins. Handlers see the full, unmodified request
// path. Everything unrouted is 404.
func (s *Server) Handle(prefix string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes = append(s.routes, route{prefix, h})
}

// ServeHTTP routes a console request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.RLock()
	var best route
	for _, rt := range s.routes {
		if strings.HasPrefix(r.URL.Path, rt.prefix) && len(rt.prefix) > len(best.prefix) {
			best = rt
		}
	}
	s.mu.RUnlock()
	if best.h == nil {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		http.NotFound(w, r)
		return
	}
	best.h.ServeHTTP(w, r)
}

// Client returns an HTTP/1.1 client that trusts the console's CA.
func (s *Server) Client() *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: s.CA.Pool(), MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2: false,
		TLSNextProto:      map[string]func(string, *tls.Conn) http.RoundTripper{},
	}}
}

// ReleaseURL returns the console URL of a fixed name or artifacts/<file>
// of the active release.
func (s *Server) ReleaseURL(name string) string {
	return s.URL + console.Prefix + name
}

// ArtifactName returns the released file name of the fixture's artifact at
// logical path.
func (s *Server) ArtifactName(path string) string {
	return s.Fixture.Manifest.Artifacts[path].Filename
}

// Close stops both servers, letting requests in flight finish for up to
// five seconds.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.Shutdown(ctx)
}

// Shutdown stops both servers gracefully, closing connections still open
// when ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	servers, done := s.servers, s.done
	s.servers, s.done = nil, nil
	s.mu.Unlock()
	var errs []error
	for i, srv := range servers {
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
			errs = append(errs, err)
		}
		if err := <-done[i]; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
