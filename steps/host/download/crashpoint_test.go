//go:build crashtest

package download

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestDownloadCrashAtPublication kills a real download process at each of
// its failpoints (verified part before the rename, target after it), then
// reruns: the rerun finishes without asking the server again, and the
// target is never anything but the verified bytes.
func TestDownloadCrashAtPublication(t *testing.T) {
	data := payload(1<<20+3, 77)
	var rec recorder
	srv := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		serveContent(w, r, data)
	}))
	for _, tc := range []struct {
		at         int
		wantTarget bool
	}{{1, false}, {2, true}} {
		t.Run("failpoint "+strconv.Itoa(tc.at), func(t *testing.T) {
			dir := t.TempDir()
			caFile := filepath.Join(dir, "ca.pem")
			writeFile(t, caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
			target := filepath.Join(dir, "oac-0123-linux-amd64-sandbox-node")
			params, _ := json.Marshal(childParams{URL: srv.URL + "/a", Target: target, SHA256: hexSum(data), CAFile: caFile, Size: int64(len(data))})
			cmd := exec.Command(os.Args[0], "-test.run=^TestDownloadChildProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+string(params), "OAC_CRASH_AT="+strconv.Itoa(tc.at))
			out := &strings.Builder{}
			cmd.Stdout, cmd.Stderr = out, out
			cmd.Run()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
				t.Fatalf("child did not die at failpoint %d: %s", tc.at, out)
			}
			assertTargetSafe(t, target, data, 0o600)
			if exists(target) != tc.wantTarget {
				t.Fatalf("target exists %v after failpoint %d", exists(target), tc.at)
			}
			before := len(rec.all())
			c := newTestClient(t, testOptions(srv))
			if err := c.Download(context.Background(), Request{URL: srv.URL + "/a", Target: target, Size: int64(len(data)), SHA256: hexSum(data), Mode: 0o600}); err != nil {
				t.Fatalf("rerun: %v", err)
			}
			assertTargetSafe(t, target, data, 0o600)
			if !exists(target) || exists(PartPath(target)) || exists(ValidatorPath(target)) {
				t.Fatal("rerun left no target, or a part or validator")
			}
			if n := len(rec.all()) - before; n != 0 {
				t.Fatalf("rerun sent %d requests for bytes it held", n)
			}
		})
	}
}
