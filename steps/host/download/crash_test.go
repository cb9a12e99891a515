package download

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// childEnv carries the child download's parameters.
const childEnv = "OAC_DOWNLOAD_TEST_CHILD"

type childParams struct {
	URL, Target, SHA256, CAFile string
	Size                        int64
}

// TestDownloadChildProcess is the download process TestDownloadSIGKILL
// starts and kills; on its own it does nothing.
func TestDownloadChildProcess(t *testing.T) {
	raw := os.Getenv(childEnv)
	if raw == "" {
		t.Skip("runs only as the child process of TestDownloadSIGKILLResume")
	}
	var p childParams
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	pemBytes, err := os.ReadFile(p.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := CertPoolFromPEM(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(Options{RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Download(context.Background(), Request{URL: p.URL, Target: p.Target, Size: p.Size, SHA256: p.SHA256, Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
}

// throttled caps a response's rate and counts the body bytes written.
type throttled struct {
	http.ResponseWriter
	count *atomic.Int64
	start time.Time
	sent  int64
	rate  float64 // bytes per second
}

func (w *throttled) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.count.Add(int64(n))
	w.sent += int64(n)
	if d := time.Duration(float64(w.sent)/w.rate*float64(time.Second)) - time.Since(w.start); d > 0 {
		time.Sleep(d)
	}
	return n, err
}

// TestDownloadSIGKILLResume kills a real download process at several
// offsets, then reruns the download: it completes, asking only for the
// missing bytes each time.
func TestDownloadSIGKILLResume(t *testing.T) {
	if testing.Short() {
		t.Skip("the SIGKILL test transfers 64 MiB; skipped with -short")
	}
	const size = 64 << 20
	data := payload(size, 64)
	want := hexSum(data)

	type served struct {
		rng   string
		bytes *atomic.Int64
	}
	var mu sync.Mutex
	var log []served
	srv := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := served{rng: r.Header.Get("Range"), bytes: new(atomic.Int64)}
		mu.Lock()
		log = append(log, s)
		mu.Unlock()
		tw := &throttled{ResponseWriter: w, count: s.bytes, start: time.Now(), rate: 96 << 20}
		serveContent(tw, r, data)
	}))
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	writeFile(t, caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	target := filepath.Join(dir, "oac-0123-linux-amd64-runtime.tar.gz")
	params, _ := json.Marshal(childParams{URL: srv.URL + "/artifact", Target: target, SHA256: want, CAFile: caFile, Size: size})

	for _, frac := range []float64{0.1, 0.5, 0.9} {
		before := max(fileSize(PartPath(target)), 0)
		cmd := exec.Command(os.Args[0], "-test.run=^TestDownloadChildProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"="+string(params))
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		at := int64(frac * size)
		deadline := time.Now().Add(30 * time.Second)
		for fileSize(PartPath(target)) < at && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("child at %.0f%% was not killed (%v): %s", frac*100, err, out)
		}
		kept := fileSize(PartPath(target))
		if exists(target) {
			t.Fatalf("target exists after a kill at %.0f%%", frac*100)
		}
		if kept < at {
			t.Fatalf("part holds %d bytes after the kill at %.0f%% (timeout?)", kept, frac*100)
		}
		mu.Lock()
		last := log[len(log)-1]
		mu.Unlock()
		if wantRange := "bytes=" + strconv.FormatInt(before, 10) + "-"; before > 0 && last.rng != wantRange {
			t.Fatalf("run after %d kept bytes asked for %q, want %q", before, last.rng, wantRange)
		}
		t.Logf("killed at %.0f%%: part %d bytes", frac*100, kept)
	}

	kept := fileSize(PartPath(target))
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c := newTestClient(t, Options{RootCAs: pool})
	mu.Lock()
	n := len(log)
	mu.Unlock()
	st, err := c.DownloadStats(context.Background(), Request{URL: srv.URL + "/artifact", Target: target, Size: size, SHA256: want, Mode: 0o600})
	if err != nil {
		t.Fatalf("rerun: %v", err)
	}
	assertTargetSafe(t, target, data, 0o600)
	if !exists(target) || exists(PartPath(target)) || exists(ValidatorPath(target)) {
		t.Fatal("rerun left no target or a part behind")
	}
	mu.Lock()
	rerun := log[n:]
	mu.Unlock()
	var sent int64
	for _, s := range rerun {
		sent += s.bytes.Load()
	}
	missing := size - kept
	if sent > missing+64<<10 {
		t.Fatalf("rerun transferred %d bytes, %d were missing", sent, missing)
	}
	if st.Kept != kept || len(rerun) != 1 {
		t.Fatalf("rerun kept %d of %d bytes in %d requests", st.Kept, kept, len(rerun))
	}
	t.Logf("rerun: %d missing, %d sent (%s)", missing, sent, fmt.Sprint(rerun[0].rng))
}
