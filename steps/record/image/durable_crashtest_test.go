//go:build crashtest

package image

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// An unpacked archive is durable before it is reported: the file is
// fsynced under its pending name before the rename and the directory
// after it. A SIGKILL test cannot see an fsync; the
// safe-file layer's crashtest record can.
func TestUnpackIsDurable(t *testing.T) {
	BothWriteModes(t, func(t *testing.T) {
		content := make([]byte, chunkSize+4097)
		for i := range content {
			content[i] = byte(i * 7)
		}
		dir := t.TempDir()
		gzPath := filepath.Join(dir, "runtime.tar.gz")
		if err := os.WriteFile(gzPath, Gz(t, content), 0o600); err != nil {
			t.Fatal(err)
		}
		tarPath := filepath.Join(dir, "runtime.tar")
		pending := filepath.Join(dir, pendingName("runtime.tar"))
		w := safefile.WatchSyncs(pending, dir)
		if err := Unpack(gzPath, tarPath, int64(len(content)), HexSum(content)); err != nil {
			t.Fatal(err)
		}
		if u := w.Unsynced(); len(u) > 0 {
			t.Fatalf("unpacked without fsync of %v", u)
		}
	})
}
