package devcore

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// waitHeld polls the hold until n downloads wait in it.
func waitHeld(t *testing.T, h *ArtifactHold, n int) {
	t.Helper()
	// The deadline only turns a hang into a failure with a reason.
	for deadline := time.Now().Add(time.Minute); h.View().Held != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("held downloads: %+v, want %d", h.View(), n)
		}
	}
}

// TestArtifactHold: a paused console sends the first half of an artifact
// and waits; Resume sends the rest; a client that goes away ends its wait;
// metadata is never held.
func TestArtifactHold(t *testing.T) {
	s := start(t, Config{DataDir: t.TempDir()})
	a := s.Fixture.Manifest.Artifacts[release.PathRuntimeImage]
	url := s.URL + "/node-install/artifacts/" + a.Filename
	c := s.Client()

	s.Hold.Pause()
	if resp, _ := get(t, c, s.ReleaseURL(release.ManifestName)); resp.StatusCode != 200 {
		t.Fatalf("manifest while paused: %d", resp.StatusCode)
	}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	half := make([]byte, a.Size/2)
	if _, err := io.ReadFull(resp.Body, half); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, s.Hold, 1)
	if v := s.Hold.View(); !v.Paused {
		t.Fatalf("view %+v", v)
	}
	s.Hold.Resume()
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if body := append(half, rest...); int64(len(body)) != a.Size || sha(body) != a.SHA256 {
		t.Fatalf("held artifact: %d bytes, sha256 %s", len(body), sha(body))
	}
	waitHeld(t, s.Hold, 0)

	// A client that goes away while held ends the wait.
	s.Hold.Pause()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	waitHeld(t, s.Hold, 1)
	cancel()
	resp.Body.Close()
	waitHeld(t, s.Hold, 0)
	s.Hold.Resume()
	if resp, body := get(t, c, url); resp.StatusCode != 200 || sha(body) != a.SHA256 {
		t.Fatalf("after resume: %d, sha256 %s", resp.StatusCode, sha(body))
	}
	// A request for a range is counted.
	if resp, _ := get(t, c, url, "Range", "bytes=10-"); resp.StatusCode != 206 || s.Hold.View().Ranged != 1 {
		t.Fatalf("range request: %d, view %+v", resp.StatusCode, s.Hold.View())
	}
}
