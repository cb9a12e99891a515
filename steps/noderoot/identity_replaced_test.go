package noderoot

import (
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// The running node replaces identity.json (a write and a rename) whenever
// it refreshes its identity: a read that meets a replacement reads the new
// file instead of refusing it as unsafe (wait_ready read it while the node
// started).
func TestReadNodeIdentityWhileTheNodeReplacesIt(t *testing.T) {
	n, _, _ := dockerNode(t)
	path := n.path("state/node/identity.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	root, err := safefile.OpenRoot(n.node.Root)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	nid, err := ParseNodeIdentity(data)
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	done := make(chan int)
	go func() {
		k := 0
		for ; !stop.Load(); k++ {
			tmp := filepath.Join(filepath.Dir(path), ".identity.json."+strconv.Itoa(k))
			if err := os.WriteFile(tmp, data, 0o600); err != nil {
				break
			}
			if err := os.Rename(tmp, path); err != nil {
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
		done <- k
	}()
	reads := 0
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); reads++ {
		if _, err := ReadNodeIdentity(root, os.Getuid(), nid.Identity.InstallationID); err != nil {
			stop.Store(true)
			<-done
			t.Fatalf("read %d, while the node replaces the file: %v", reads, err)
		}
	}
	stop.Store(true)
	t.Logf("%d reads while the file was replaced %d times", reads, <-done)
}
