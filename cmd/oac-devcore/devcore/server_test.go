package devcore

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/release"
)

func start(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	s, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func get(t *testing.T, c *http.Client, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestServesVerifiedRelease fetches the metadata over TLS with the CA file
// the console wrote, verifies it, and downloads every artifact, the image
// through the release host's redirect.
func TestServesVerifiedRelease(t *testing.T) {
	data := t.TempDir()
	s := start(t, Config{DataDir: data, ReleaseHostListen: "127.0.0.1:0"})
	if s.CA.CertPath != filepath.Join(data, CAFileName) {
		t.Fatalf("CA at %s", s.CA.CertPath)
	}
	if st, err := os.Stat(filepath.Join(data, CAKeyFileName)); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("CA key: %v %v", st, err)
	}
	// A client that knows only the CA file, as the installer does.
	pem, err := os.ReadFile(s.CA.CertPath)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("CA file holds no PEM certificate")
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	_, mb := get(t, c, s.URL+"/node-install/manifest.json")
	_, sb := get(t, c, s.URL+"/node-install/SHA256SUMS")
	for _, p := range release.Providers() {
		r, err := release.VerifyRelease(mb, sb, p)
		if err != nil {
			t.Fatalf("VerifyRelease(%s): %v", p, err)
		}
		if r.Manifest.SourceCommit != s.Fixture.SourceCommit {
			t.Fatalf("served release %s, fixture %s", r.Manifest.SourceCommit, s.Fixture.SourceCommit)
		}
	}
	r, _ := release.VerifyRelease(mb, sb, release.ProviderMicrosandbox)
	for _, name := range []string{release.SeccompName, release.InstallerName} {
		_, body := get(t, c, s.URL+"/node-install/"+name)
		if sha(body) != r.Sums[name] {
			t.Errorf("%s does not match SHA256SUMS", name)
		}
	}
	for _, a := range r.Artifacts() {
		resp, body := get(t, c, s.URL+"/node-install/artifacts/"+a.Filename)
		if resp.StatusCode != 200 || int64(len(body)) != a.Size || sha(body) != a.SHA256 {
			t.Errorf("artifact %s: %d, %d bytes, sha256 %s", a.Path, resp.StatusCode, len(body), sha(body))
		}
		viaHost := resp.Request.URL.Host != s.URL[len("https://"):]
		if viaHost != (a.Path == release.PathRuntimeImage) {
			t.Errorf("artifact %s served from %s", a.Path, resp.Request.URL.Host)
		}
	}
	// The redirect target resumes like the console does.
	img := r.Manifest.Artifacts[release.PathRuntimeImage]
	resp, body := get(t, c, release.ArtifactURL(r.Manifest.ArtifactBaseURL, img.Filename), "Range", "bytes=10-", "If-Range", `"`+img.SHA256+`"`)
	if resp.StatusCode != 206 || int64(len(body)) != img.Size-10 {
		t.Fatalf("release host range: %d, %d bytes", resp.StatusCode, len(body))
	}
	if resp, _ := get(t, c, s.URL+"/elsewhere"); resp.StatusCode != 404 {
		t.Fatalf("unrouted path: %d", resp.StatusCode)
	}
	spec, err := s.Fixture.Specification(release.ProviderDocker)
	if err != nil {
		t.Fatal(err)
	}
	if err := release.MatchRelease(spec, r.Manifest); err != nil {
		t.Fatal(err)
	}
}

// TestRestart reuses a data directory: equal inputs republish the same
// release; another installer makes a new release that becomes active.
func TestRestart(t *testing.T) {
	data := t.TempDir()
	first, err := Start(Config{DataDir: data, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	commit, caPEM := first.Fixture.SourceCommit, first.CA.Cert.Raw
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again := start(t, Config{DataDir: data})
	if again.Fixture.SourceCommit != commit || !bytes.Equal(again.CA.Cert.Raw, caPEM) {
		t.Fatal("restart with equal inputs changed the release or the CA")
	}
	again.Close()

	installer := filepath.Join(t.TempDir(), "oac-node-install")
	if err := os.WriteFile(installer, []byte("\x7fELF a real binary"), 0o700); err != nil {
		t.Fatal(err)
	}
	s := start(t, Config{DataDir: data, Fixture: FixtureOptions{Installer: installer}})
	if s.Fixture.SourceCommit == commit || s.Fixture.PlaceholderInstaller {
		t.Fatal("a new installer did not make a new release")
	}
	_, body := get(t, s.Client(), s.URL+"/node-install/oac-node-install")
	if string(body) != "\x7fELF a real binary" {
		t.Fatalf("served installer %q", body)
	}
	resp, _ := get(t, s.Client(), s.URL+"/node-install/releases/"+commit+"/manifest.json")
	if resp.StatusCode != 200 {
		t.Fatalf("the earlier release is no longer served: %d", resp.StatusCode)
	}
}

func TestPaddedNodeProgram(t *testing.T) {
	dir := t.TempDir()
	fx, err := BuildFixture(dir, FixtureOptions{NodeProgramSize: 3 << 20})
	if err != nil {
		t.Fatal(err)
	}
	node := fx.Manifest.Artifacts[release.PathNode]
	if node.Size != 3<<20 {
		t.Fatalf("node program %d bytes", node.Size)
	}
	again, err := BuildFixture(dir, FixtureOptions{NodeProgramSize: 3 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if again.SourceCommit != fx.SourceCommit {
		t.Fatal("equal options built another release")
	}
	if _, err := BuildFixture(t.TempDir(), FixtureOptions{NodeProgramSize: 3 << 20}); err != nil {
		t.Fatal(err)
	}
}
