package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/record/console"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/record/release/releasetest"
)

// The download measure: a 512 MiB artifact published with the console's
// own publication code and served by console.Handler over loopback HTTPS
// (HTTP/1.1, the way the installer talks to it). Compared in the same run:
//
//	(a) our verified download (sha256 while streaming, part file, fsync,
//	    rename) against `curl -s -o FILE URL && sha256sum FILE`;
//	(b) the same, with its target on the work disk and on tmpfs, against
//	    a bare Go HTTPS GET hashing the body without a file (printed for
//	    information), and against the physical floor of a download that
//	    keeps its bytes: that GET running beside a plain write of the same
//	    size (write+fsync on the disk, a page-cache write on tmpfs), which
//	    is the gated ratio on tmpfs (on the disk it is printed for
//	    information: this virtual disk's own speed varies by ±20% between
//	    runs, more than the goal's margin). On a 2-core machine the bare GET already uses
//	    both cores (server and client TLS, sha256), so the copy of 512 MiB
//	    into the page cache cannot be hidden behind it: measured here, a
//	    plain 512 MiB write into fresh tmpfs pages takes 0.36 s, and into
//	    the disk with fdatasync 1.65 s, against 0.8 s for the bare GET;
//	(c) bytes sent to resume a download interrupted at 50%, against the
//	    remaining bytes plus the 64 KiB the contract allows.
//
// The timed sides run downloadReps times each, rotating which goes first;
// the best time of each side counts, as background load on a shared
// machine only ever adds time.
func init() { register("download", benchDownload) }

const (
	downloadSize   = 512 << 20
	downloadReps   = 5
	downloadPairs  = 7
	downloadCommit = "0123456789abcdef0123456789abcdef01234567"
)

func benchDownload(dir string) ([]Result, error) {
	art, sum, err := writeArtifact(filepath.Join(dir, "src"), downloadSize)
	if err != nil {
		return nil, err
	}
	payload := filepath.Join(dir, "payload")
	fileName, err := publishBenchRelease(payload, art, sum)
	if err != nil {
		return nil, err
	}
	os.Remove(art) // published by hard link copy; the source is no longer needed

	var served atomic.Int64
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = countBytes(console.Handler(payload, srv.Listener.Addr().String()), &served)
	srv.StartTLS()
	defer srv.Close()
	url := srv.URL + console.Prefix + "releases/" + downloadCommit + "/artifacts/" + fileName

	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		return nil, err
	}
	client, err := download.NewClient(download.Options{RootCAs: pool})
	if err != nil {
		return nil, err
	}
	defer client.Close()
	target := filepath.Join(dir, "target", fileName)
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return nil, err
	}
	req := download.Request{URL: url, Target: target, Size: downloadSize, SHA256: sum, Mode: 0o600}

	ours := func() (time.Duration, error) {
		defer os.Remove(target)
		start := time.Now()
		if err := client.Download(context.Background(), req); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}
	curlOut := filepath.Join(dir, "target", "curl.out")
	curlScript := func(script string) func() (time.Duration, error) {
		return func() (time.Duration, error) {
			defer os.Remove(curlOut)
			start := time.Now()
			out, err := exec.Command("sh", "-c", script, "sh", caFile, curlOut, url).Output()
			d := time.Since(start)
			if err != nil {
				return 0, fmt.Errorf("curl and sha256sum: %w", err)
			}
			if !strings.HasPrefix(string(out), sum) {
				return 0, errors.New("curl and sha256sum: wrong checksum")
			}
			return d, nil
		}
	}
	// The gated reference keeps the file as durably as ours does
	// (sync(1) of the file is its fsync): the time this virtual disk takes
	// to write 512 MiB back varies by ±20% from run to run, and only a
	// reference that waits for it too compares like with like.
	curlSync := curlScript(`curl -s --cacert "$1" -o "$2" "$3" && sha256sum "$2" && sync "$2"`)
	curl := curlScript(`curl -s --cacert "$1" -o "$2" "$3" && sha256sum "$2"`)
	bare := bareGet(pool, url, sum)
	disk := rawWrite(filepath.Join(dir, "target", "raw"), downloadSize)
	// What a durable download costs on this machine when done with plain
	// tools: receiving and hashing, and writing the same amount the way
	// dd conv=fsync does, at the same time on the same CPUs and disk. It is
	// no strict floor (ours starts writeback early, dd waits for the
	// fsync), but it shows what the bare GET leaves out.
	both := func() (time.Duration, error) {
		start := time.Now()
		errc := make(chan error, 1)
		go func() { _, err := disk(); errc <- err }()
		_, err := bare()
		if derr := <-errc; err == nil {
			err = derr
		}
		return time.Since(start), err
	}

	// (b) on a tmpfs target: the same verified download with the disk's
	// physical limit taken out, so the ratio to the bare GET is the cost of
	// the download machinery itself (hashing once, part file, fsync and
	// rename calls, resume bookkeeping).
	memDir, err := tmpfsDir()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(memDir)
	memReq := req
	memReq.Target = filepath.Join(memDir, fileName)
	oursMem := func() (time.Duration, error) {
		defer os.Remove(memReq.Target)
		start := time.Now()
		if err := client.Download(context.Background(), memReq); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}

	// The physical floor on tmpfs: the bare GET beside a plain write of the
	// same size into tmpfs pages (what keeping the bytes costs on this
	// machine's memory at the least, however the work is overlapped).
	memDisk := rawWrite(filepath.Join(memDir, "raw"), downloadSize)
	bothMem := func() (time.Duration, error) {
		start := time.Now()
		errc := make(chan error, 1)
		go func() { _, err := memDisk(); errc <- err }()
		_, err := bare()
		if derr := <-errc; err == nil {
			err = derr
		}
		return time.Since(start), err
	}

	sides := []func() (time.Duration, error){ours, bare, both, oursMem, bothMem}
	haveCurl := true
	if _, err := exec.LookPath("curl"); err != nil {
		haveCurl = false
		fmt.Println("download   curl is not installed: skipping the comparison with curl and sha256sum")
	} else {
		sides = append(sides, curl)
	}
	best, err := bestOfRotations(sides)
	if err != nil {
		return nil, err
	}
	var results []Result
	if haveCurl {
		// Pairs of ours and the durable curl, back to back, the order
		// alternating: the median of the pairs' ratios counts.
		var ratios []float64
		var o, c []time.Duration
		for i := range downloadPairs {
			pair := []func() (time.Duration, error){ours, curlSync}
			if i%2 == 1 {
				pair[0], pair[1] = pair[1], pair[0]
			}
			var d [2]time.Duration
			for j, f := range pair {
				if d[j], err = f(); err != nil {
					return nil, err
				}
			}
			if i%2 == 1 {
				d[0], d[1] = d[1], d[0]
			}
			o, c = append(o, d[0]), append(c, d[1])
			ratios = append(ratios, d[0].Seconds()/d[1].Seconds())
		}
		r := timeResult("verified download vs curl + sha256sum + sync", median(o), median(c), 0.6,
			fmt.Sprintf("console.Handler, loopback HTTPS, 512 MiB on the work disk; median ratio of %d alternating pairs (quartiles %.3f–%.3f), medians shown",
				downloadPairs, quantile(ratios, 0.25), quantile(ratios, 0.75)))
		r.Ratio = medianFloat(ratios)
		results = append(results, r)
		info := timeResult("verified download vs curl + sha256sum (no sync)", best[0], best[5], 0,
			"information: best of 5; the reference leaves its 512 MiB in the page cache, ours waits for the disk")
		info.Info = true
		results = append(results, info)
	}
	results = append(results, timeResult("verified download (tmpfs) vs GET ∥ tmpfs write", best[3], best[4], 1.2,
		"the physical floor of a download that keeps its bytes: a bare GET+sha256 beside a plain 512 MiB write into tmpfs"))
	info := timeResult("verified download (tmpfs) vs bare Go GET + sha256", best[3], best[1], 0,
		"information: the bare GET keeps nothing; keeping 512 MiB costs a page-cache copy that this 2-core machine cannot hide")
	info.Info = true
	results = append(results, info)
	info = timeResult("verified download (disk) vs GET ∥ write+fsync", best[0], best[2], 0,
		"information: the floor on the work disk, a bare GET beside a dd conv=fsync-style write of 512 MiB; this virtual disk alone varies by ±20% from run to run (dd: 1.2-1.8 s)")
	info.Info = true
	results = append(results, info)
	info = timeResult("verified download (disk) vs bare Go GET + sha256", best[0], best[1], 0,
		"information: on disk ours also writes and fsyncs 512 MiB, which this disk cannot do as fast as the GET")
	info.Info = true
	results = append(results, info)

	// (c) Interrupt at 50%, then resume and count what the server sends.
	ctx, cancel := context.WithCancel(context.Background())
	half := req
	half.Progress = func(done, total int64) {
		if done >= total/2 {
			cancel()
		}
	}
	if err := client.Download(ctx, half); !errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("interrupted download: %v", err)
	}
	missing, err := download.Missing(target, downloadSize)
	if err != nil {
		return nil, err
	}
	served.Store(0)
	if err := client.Download(context.Background(), req); err != nil {
		return nil, fmt.Errorf("resumed download: %w", err)
	}
	os.Remove(target)
	sent := float64(served.Load())
	allowed := float64(missing + 64<<10)
	results = append(results, Result{
		Name: "bytes sent on resume after 50%", Ours: sent / (1 << 20), Reference: allowed / (1 << 20), Unit: "MiB",
		Ratio: sent / allowed, Goal: 1.0, Max: true,
		Note: fmt.Sprintf("reference = %d missing bytes + 64 KiB", missing),
	})
	return results, nil
}

// tmpfsDir makes a scratch directory on a tmpfs (/dev/shm), where writing
// and fsync cost only memory copies.
func tmpfsDir() (string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil || st.Type != unix.TMPFS_MAGIC {
		return "", errors.New("no tmpfs at /dev/shm for the download machinery measure")
	}
	return os.MkdirTemp("/dev/shm", "oac-bench-download-")
}

// bareGet is the reference that only receives and hashes: the same
// HTTP/1.1 TLS transport settings, no file.
func bareGet(pool *x509.CertPool, url, sum string) func() (time.Duration, error) {
	tr := &http.Transport{
		TLSClientConfig:    &tls.Config{RootCAs: pool},
		TLSNextProto:       map[string]func(string, *tls.Conn) http.RoundTripper{},
		DisableCompression: true,
	}
	c := &http.Client{Transport: tr}
	buf := make([]byte, 1<<20)
	return func() (time.Duration, error) {
		start := time.Now()
		resp, err := c.Get(url)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		h := sha256.New()
		if _, err := io.CopyBuffer(h, struct{ io.Reader }{resp.Body}, buf); err != nil {
			return 0, err
		}
		if hex.EncodeToString(h.Sum(nil)) != sum {
			return 0, errors.New("bare GET: wrong checksum")
		}
		return time.Since(start), nil
	}
}

// rawWrite is the disk's part of the floor: 512 MiB written from memory
// in 1 MiB write(2) calls, then fsync, the way dd conv=fsync does it.
func rawWrite(path string, size int64) func() (time.Duration, error) {
	block := make([]byte, 1<<20)
	for i := range block {
		block[i] = byte(i * 7)
	}
	return func() (time.Duration, error) {
		defer os.Remove(path)
		start := time.Now()
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		for off := int64(0); off < size; off += int64(len(block)) {
			if _, err := f.Write(block); err != nil {
				return 0, fmt.Errorf("write %s: %w", path, err)
			}
		}
		if err := f.Sync(); err != nil {
			return 0, fmt.Errorf("fsync %s: %w", path, err)
		}
		return time.Since(start), nil
	}
}

// bestOfRotations runs every side downloadReps times, rotating which goes
// first, and returns the best time of each.
func bestOfRotations(sides []func() (time.Duration, error)) ([]time.Duration, error) {
	best := make([]time.Duration, len(sides))
	for i := range downloadReps {
		for j := range sides {
			k := (i + j) % len(sides)
			d, err := sides[k]()
			if err != nil {
				return nil, err
			}
			if best[k] == 0 || d < best[k] {
				best[k] = d
			}
		}
	}
	return best, nil
}

func timeResult(name string, ours, ref time.Duration, goal float64, note string) Result {
	return Result{
		Name: name, Ours: ours.Seconds(), Reference: ref.Seconds(), Unit: "s",
		Ratio: ours.Seconds() / ref.Seconds(), Goal: goal, Max: true, Note: note,
	}
}

// writeArtifact writes size deterministic bytes (a 1 MiB pseudo-random
// block, each copy stamped with its index) and returns their sha256.
func writeArtifact(path string, size int64) (string, string, error) {
	block := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(block); i += 8 {
		binary.LittleEndian.PutUint64(block[i:], r.Uint64())
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	h := sha256.New()
	w := io.MultiWriter(f, h)
	for i := int64(0); i < size; i += int64(len(block)) {
		binary.LittleEndian.PutUint64(block, uint64(i))
		n := min(int64(len(block)), size-i)
		if _, err := w.Write(block[:n]); err != nil {
			return "", "", fmt.Errorf("write %s: %w", path, err)
		}
	}
	return path, hex.EncodeToString(h.Sum(nil)), f.Close()
}

// publishBenchRelease publishes a release whose runtime.tar.gz is the
// artifact at art, and returns that artifact's released file name.
func publishBenchRelease(payload, art, sum string) (string, error) {
	artifacts := map[string]string{}
	m := releasetest.MicrosandboxManifest(downloadCommit, func(spec release.ArtifactSpec) release.Artifact {
		name := release.FileName(downloadCommit, spec.Suffix)
		a := release.Artifact{Filename: name}
		if spec.Path == release.PathRuntimeImage {
			a.SHA256, a.Size = sum, downloadSize
			a.UnpackedSHA256, a.UnpackedSize = strings.Repeat("4", 64), 2*downloadSize
			artifacts[name] = art
		} else {
			data := []byte("bytes of " + spec.Path + "\n")
			a.SHA256, a.Size = release.SHA256Hex(data), int64(len(data))
		}
		return a
	})
	files, err := releasetest.Files(m, []byte(`{"defaultAction":"SCMP_ACT_ALLOW"}`+"\n"), []byte("installer bytes\n"))
	if err != nil {
		return "", err
	}
	err = console.Publish(payload, console.ReleaseFiles{Files: files, Artifacts: artifacts})
	if err != nil {
		return "", fmt.Errorf("publish the benchmark release: %w", err)
	}
	return m.Artifacts[release.PathRuntimeImage].Filename, nil
}

// countBytes counts the response body bytes h writes.
func countBytes(h http.Handler, n *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&countingWriter{ResponseWriter: w, n: n}, r)
	})
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (w *countingWriter) Write(b []byte) (int, error) {
	k, err := w.ResponseWriter.Write(b)
	w.n.Add(int64(k))
	return k, err
}
