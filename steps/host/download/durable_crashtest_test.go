//go:build crashtest

package download

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// A download is durable before it reports success: the part file is
// fsynced before its rename and the directory after, and a target found
// already in place (reused, or published meanwhile) is fsynced with its
// directory before it is reported reused. A SIGKILL test cannot see an
// fsync; the safe-file layer's crashtest record can.
func TestDownloadIsDurable(t *testing.T) {
	data := payload(64<<10, 5)
	srv := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { serveContent(w, r, data) }))
	c := newTestClient(t, testOptions(srv))
	dir := t.TempDir()
	target := filepath.Join(dir, "artifact")
	req := Request{URL: srv.URL + "/a", Target: target, Size: int64(len(data)), SHA256: hexSum(data), Mode: 0o600}

	part, d := safefile.SyncCount(PartPath(target)), safefile.SyncCount(dir)
	if err := c.Download(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if safefile.SyncCount(PartPath(target)) == part || safefile.SyncCount(dir) == d {
		t.Fatal("download published without fsync of the part file or of the directory")
	}

	// A target an earlier run renamed into place but may not have made
	// durable: the reuse fsyncs it and the directory first.
	reused := filepath.Join(dir, "reused")
	if err := os.WriteFile(reused, data, 0o600); err != nil {
		t.Fatal(err)
	}
	req.Target = reused
	file, d := safefile.SyncCount(reused), safefile.SyncCount(dir)
	st, err := c.DownloadStats(context.Background(), req)
	if err != nil || !st.Reused {
		t.Fatalf("reuse: %+v, %v", st, err)
	}
	if safefile.SyncCount(reused) == file || safefile.SyncCount(dir) == d {
		t.Fatalf("reused target without fsync of the file (%d) and its directory (%d)",
			safefile.SyncCount(reused)-file, safefile.SyncCount(dir)-d)
	}
}
