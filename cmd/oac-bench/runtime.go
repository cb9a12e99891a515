package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/image/imagetest"
	"github.com/openagentcore/oac-node-install/steps/testsupport/diskpeak"
)

// The runtime measure: the import of a Runtime image at the platform's
// real size into the machine's Docker Engine, the way the install's runtime
// step does it, side by side in the same run with the standard tools doing
// the same unavoidable work on the same file. The image is built at bench
// time: runtime.tar of 512 MiB plus a few KiB (OAC_BENCH_RUNTIME_MIB sets
// another size; pseudo-random payload that gzip compresses about 2:1, over
// 4 layers, plus the fixture's label layer), runtime.tar.gz of about
// 230 MiB. Each contender runs as its own
// process (max RSS from its rusage), with the engine emptied of the image
// before it; a sampler reads the free space of the scratch directory's and
// the engine's file systems every 20 ms (peak extra disk: the largest drop
// from the free space before the run, summed over the distinct file
// systems; the engine's own growth is in it for every contender):
//
//	ours     oac-bench itself (runtime-child), as the runtime step: open
//	         runtime.tar.gz once, ImageLoadReader of its gunzipped stream
//	         through image.LoadReader, which proves it as it passes (sha256
//	         and size, gunzip, unpacked sha256 and size, identity) and
//	         releases the stream's last MiB only once the proof holds; no
//	         unpacked copy;
//	before   the previous path, for the note: image.UnpackIdentify to
//	         runtime.tar (written, fsynced), ImageLoad of it, then its removal;
//	tools    sh -c 'sha256sum -c SUMS && docker load -i runtime.tar.gz'
//	         (reference: the same checks the archive's sha256 proves, and the load);
//	floor    docker load -i runtime.tar.gz alone (the physical floor of the
//	         import: the engine's own work).
//
// The download of the same file against curl is the download measure; the
// first install at this size, download and proof included, is
// BenchmarkEndToEndInstallRealSize (make bench).
// Skipped, saying so, without a Docker Engine or the docker CLI.
func init() { register("runtime", benchRuntime) }

const (
	runtimeLayers = 4
	runtimeChild  = "OAC_BENCH_RUNTIME_CHILD"
)

// runtimeRun is what one contender's run measured.
type runtimeRun struct {
	Total  time.Duration
	Phases map[string]time.Duration // the child's own phases
	RSSKiB int64                    // max RSS: the child's own VmHWM, else its rusage (and its children's)
	Disk   int64                    // peak extra disk, bytes
}

func benchRuntime(dir string) ([]Result, error) {
	if _, err := os.Stat("/var/run/docker.sock"); err != nil {
		fmt.Println("runtime    skipped: no Docker Engine socket at /var/run/docker.sock")
		return nil, nil
	}
	if _, err := exec.LookPath("docker"); err != nil {
		fmt.Println("runtime    skipped: no docker CLI")
		return nil, nil
	}
	cl, err := docker.New("")
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx := context.Background()
	if _, err := cl.Info(ctx); err != nil {
		fmt.Printf("runtime    skipped: the Docker Engine does not answer: %v\n", err)
		return nil, nil
	}
	start := time.Now()
	label := fmt.Sprintf("oac-bench-runtime-%d", time.Now().UnixNano())
	payload := int64(512)
	if v, err := strconv.ParseInt(os.Getenv("OAC_BENCH_RUNTIME_MIB"), 10, 64); err == nil && v > 0 {
		payload = v
	}
	fx, err := imagetest.WriteFixture(dir, imagetest.Options{Label: label, PayloadSize: payload << 20, PayloadLayers: runtimeLayers})
	if err != nil {
		return nil, err
	}
	build := time.Since(start)
	if err := os.Remove(fx.TarPath); err != nil {
		return nil, err
	}
	sums := filepath.Join(dir, "SHA256SUMS")
	if err := os.WriteFile(sums, []byte(fx.GzSHA256+"  runtime.tar.gz\n"), 0o600); err != nil {
		return nil, err
	}
	removeImage := func() {
		for _, id := range []string{fx.ConfigDigest, fx.ManifestDigest} {
			exec.Command("docker", "rmi", "-f", id).Run()
		}
	}
	removeImage()
	defer removeImage()
	dockerRoot, _ := exec.Command("docker", "info", "--format", "{{.DockerRootDir}}").Output()
	watch := []string{dir}
	if d := strings.TrimSpace(string(dockerRoot)); d != "" {
		watch = append(watch, d)
	}

	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	spec, _ := json.Marshal(fx)
	child := func(mode string) *exec.Cmd {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), runtimeChild+"="+mode, "OAC_BENCH_RUNTIME_FIXTURE="+string(spec))
		cmd.Dir = dir
		return cmd
	}
	contenders := map[string]func() *exec.Cmd{
		"ours":   func() *exec.Cmd { return child("ours") },
		"before": func() *exec.Cmd { return child("before") },
		"tools": func() *exec.Cmd {
			c := exec.Command("sh", "-c", "sha256sum --quiet -c SHA256SUMS && docker load -q -i runtime.tar.gz >/dev/null")
			c.Dir = dir
			return c
		},
		"floor": func() *exec.Cmd {
			c := exec.Command("docker", "load", "-q", "-i", "runtime.tar.gz")
			c.Dir = dir
			return c
		},
	}
	runs := map[string]runtimeRun{}
	for _, name := range []string{"floor", "ours", "tools", "before"} {
		removeImage()
		exec.Command("sync").Run()
		r, err := measureRun(contenders[name](), watch)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if _, found, err := image.Resolve(ctx, cl, fx.Identity); err != nil || !found {
			return nil, fmt.Errorf("%s: the engine does not hold the image after the load (%v)", name, err)
		}
		runs[name] = r
	}
	o, t, f, b := runs["ours"], runs["tools"], runs["floor"], runs["before"]
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	note := fmt.Sprintf("runtime.tar.gz %d MiB → runtime.tar %d MiB in %d layers, built in %.1fs; "+
		"ours: max RSS %.0f MiB, peak extra disk %.0f MiB; tools: max RSS %.0f MiB, disk %.0f MiB; floor (docker load -i) %.2fs, disk %.0f MiB; "+
		"before (unpack to runtime.tar, load it): %.2fs = unpack+identify %.2fs + load %.2fs, max RSS %.0f MiB, peak extra disk %.0f MiB",
		fx.GzSize>>20, fx.TarSize>>20, runtimeLayers+1, build.Seconds(),
		float64(o.RSSKiB)/1024, mib(o.Disk), float64(t.RSSKiB)/1024, mib(t.Disk), f.Total.Seconds(), mib(f.Disk),
		b.Total.Seconds(), b.Phases["unpack"].Seconds(), b.Phases["load"].Seconds(), float64(b.RSSKiB)/1024, mib(b.Disk))
	return []Result{
		{Name: "Runtime import vs sha256sum -c + docker load -i", Ours: o.Total.Seconds(), Reference: t.Total.Seconds(), Unit: "s",
			Ratio: o.Total.Seconds() / t.Total.Seconds(), Goal: 1.0, Max: true, Note: note},
		{Name: "Runtime import vs docker load -i (floor)", Ours: o.Total.Seconds(), Reference: f.Total.Seconds(), Unit: "s",
			Ratio: o.Total.Seconds() / f.Total.Seconds(), Goal: 1.15, Max: true},
		{Name: "Runtime import peak extra disk vs docker load -i", Ours: mib(o.Disk), Reference: mib(f.Disk), Unit: "MiB",
			Ratio: float64(o.Disk) / float64(max(f.Disk, 1)), Info: true,
			Note: fmt.Sprintf("the first install's disk goal is the real-size install measure; the archive (%.0f MiB) is on disk before either starts; before: %.0f MiB", mib(fx.GzSize), mib(b.Disk))},
		{Name: fmt.Sprintf("Runtime import max RSS at %d MiB (MiB, goal ≤ 128)", fx.TarSize>>20), Ours: float64(o.RSSKiB) / 1024, Reference: 128, Unit: "MiB",
			Ratio: float64(o.RSSKiB) / 1024 / 128, Goal: 1.0, Max: true},
	}, nil
}

// measureRun runs cmd, sampling the free space of the file systems of
// paths, and returns its wall time, max RSS and peak extra disk, and the
// phases a child printed (one JSON object on its standard output).
func measureRun(cmd *exec.Cmd, paths []string) (runtimeRun, error) {
	disk := diskpeak.Start(paths...)
	var out strings.Builder
	if cmd.Stdout == nil {
		cmd.Stdout = &out
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	total := time.Since(start)
	peak := disk.Stop()
	if err != nil {
		return runtimeRun{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	r := runtimeRun{Total: total, Phases: map[string]time.Duration{}}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.RSSKiB = ru.Maxrss
	}
	r.Disk = peak
	if s := strings.TrimSpace(out.String()); strings.HasPrefix(s, "{") {
		var ph map[string]float64
		if err := json.Unmarshal([]byte(s), &ph); err == nil {
			for k, v := range ph {
				if k == phaseRSS {
					r.RSSKiB = int64(v)
					continue
				}
				r.Phases[k] = time.Duration(v * float64(time.Second))
			}
		}
	}
	return r, nil
}

// runtimeChildMain is the process a contender of the runtime measure runs
// in (oac-bench with OAC_BENCH_RUNTIME_CHILD set): it imports the fixture
// from its working directory and prints its phases as JSON.
func runtimeChildMain(mode string) {
	if err := runtimeChildRun(mode); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func runtimeChildRun(mode string) error {
	var fx imagetest.Fixture
	if err := json.Unmarshal([]byte(os.Getenv("OAC_BENCH_RUNTIME_FIXTURE")), &fx); err != nil {
		return err
	}
	cl, err := docker.New("")
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx := context.Background()
	phases := map[string]float64{}
	t := time.Now()
	lap := func(name string) {
		phases[name] = time.Since(t).Seconds()
		t = time.Now()
	}
	switch mode {
	case "ours":
		f, err := os.OpenFile(fx.GzPath, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		a := image.Archive{Size: fx.GzSize, SHA256: fx.GzSHA256, UnpackedSize: fx.TarSize, UnpackedSHA256: fx.TarSHA256, Want: fx.Identity}
		lr := image.LoadReader(f, a)
		defer lr.Close()
		if err := cl.ImageLoadReader(ctx, lr, fx.GzPath); err != nil {
			return err
		}
		lap("load")
	case "before":
		tar := filepath.Join(filepath.Dir(fx.GzPath), "runtime.tar")
		defer os.Remove(tar)
		id, err := image.UnpackIdentify(fx.GzPath, tar, fx.TarSize, fx.TarSHA256)
		if err == nil {
			err = id.Check(fx.Identity)
		}
		if err != nil {
			return err
		}
		lap("unpack")
		if err := cl.ImageLoad(ctx, tar); err != nil {
			return err
		}
		lap("load")
		if err := os.Remove(tar); err != nil {
			return err
		}
		lap("remove")
	default:
		return errors.New("unknown runtime child mode " + strconv.Quote(mode))
	}
	if kib, err := peakRSS(); err == nil {
		phases[phaseRSS] = float64(kib)
	}
	b, _ := json.Marshal(phases)
	fmt.Println(string(b))
	return nil
}

// phaseRSS is the "phase" a runtime child reports its own peak RSS in
// (KiB): a child's rusage counts, as its maximum, the resident set of the
// process it was forked from until its exec (Linux keeps the larger of
// the two), so oac-bench's own memory, grown by the measures run before,
// would be counted as the child's.
const phaseRSS = "vmhwm_kib"

// peakRSS is this process's peak resident set (VmHWM), in KiB.
func peakRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}
