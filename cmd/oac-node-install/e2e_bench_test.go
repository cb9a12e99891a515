//go:build e2e

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/journal"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/testsupport/diskpeak"
	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
	"github.com/openagentcore/oac-node-install/workflow"
)

// The installation measures of `make bench` (CONTRACT-free: they only read
// what the installer prints and what the host shows). Both run the real
// binary as root in the test host against oac-devcore over TLS, as the
// end-to-end tests do, and report in oac-bench's line format.
//
// First install: the installer's wall time, per phase (from the moment
// each "==>" line is printed) and per step (from the install journal),
// against the sum of its unavoidable parts, each done with a standard tool
// in the same run on the same machine:
//
//   - the downloads: curl(1) of the same files from the same console, and
//     sync(1) of them;
//   - `docker load` of the same Runtime archive into the same engine;
//   - the Docker network: one POST /networks/create to the same engine
//     with curl(1);
//   - the account: useradd(8) and usermod(8) as the installer calls them,
//     and sync(1) of the four account files;
//   - the retained helper: cp(1) of the installer and sync(1) of the copy;
//   - the registration: the release's node program registering a second
//     node with Core (`oac-node register` with a new token);
//   - the service: `systemctl --no-reload enable` and `systemctl start` of
//     a unit of the same kind.
//
// The installer's own overhead is everything else: the journal, the
// service-account children, the checks and verifications, its own fsyncs.
// Waiting until Core reports the node connected and ready is the node
// program's and Core's time, not the installer's: it is printed and left
// out of the ratio. The ratio against the three parts the issue names
// first (downloads, docker load, systemd's start of the unit) is printed
// for information.
//
// Rerun of the registered, healthy node: wall time, the CPU time of the
// whole process tree (the installer and every child it waited for, from
// wait4's rusage) as its local work, the rest as waiting on Core and the
// disk, and how many files under /etc, /var/lib and /run changed (goal 0).
// The local work's reference is the same unavoidable work done by standard
// tools in the same host, CPU time of their process tree likewise
// (rerunReference): the installer started twice (root's process and the
// service account's child), cmp(1) of the installer with the node's
// retained helper, sha256sum(1) of the node's Runtime and program files,
// and one curl(1) request to Core's identity route with the node's
// credential over TLS.
//
//	go test -tags e2e -run '^$' -bench EndToEndInstall -benchtime 1x ./cmd/oac-node-install/

// rerunReps is how many reruns of the registered node are measured.
const rerunReps = 15

func BenchmarkEndToEndInstall(b *testing.B) {
	benchFailed = false // this benchmark's own measures decide
	if _, err := exec.LookPath("curl"); err != nil {
		b.Skip("bench install: needs curl(1) for the download reference")
	}
	bin, core, h := endToEnd(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	installer := filepath.Join(bin, "oac-node-install")
	args := []string{"--source-url", core.url, "--core-url", core.url, "--provider", "docker",
		"--installation-id", core.installationID, "--core-ca", core.ca}

	// Rounds of a first install and its references, each on a new test
	// host with the engine cleared of the last one's image and network;
	// the medians count (the engine's own times vary by tens of percent
	// from one call to the next).
	samples, h := installRounds(ctx, b, h, core, installer, args, max(envInt("OAC_BENCH_ROUNDS", 9), 1))
	last := samples[len(samples)-1]
	names := make([]string, 0, len(last.phases))
	for n := range last.phases {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return last.phases[names[i]] > last.phases[names[j]] })
	for _, n := range names {
		benchLine("install", "phase "+n, last.phases[n].Seconds(), 0, "s", 0, 0, false, true, "(last round)")
	}
	benchLine("install", "steps (ms, begin to done)", 0, 0, "s", 0, 0, false, true, last.steps+" (last round)")
	med := func(f func(installSample) time.Duration) time.Duration { return medianOf(samples, f) }
	parts := partTimes(samples)
	benchLine("install", "first install, parts", 0, 0, "s", 0, 0, false, true,
		fmt.Sprintf("medians of %d rounds: %s (systemd's start of the unit itself %.0f ms); waiting for Core %.0f ms; total %.0f ms",
			len(samples), parts, ms(med(func(s installSample) time.Duration { return s.start })),
			ms(med(func(s installSample) time.Duration { return s.wait })), ms(med(func(s installSample) time.Duration { return s.total }))))
	var ratios, named []float64
	for _, s := range samples {
		ratios = append(ratios, s.ours().Seconds()/s.unavoidable().Seconds())
		named = append(named, s.total.Seconds()/(s.downloads+s.load+s.start).Seconds())
	}
	ours, ref := med(installSample.ours), med(installSample.unavoidable)
	ratio := medianFloat(ratios)
	benchLine("install", "first install vs its unavoidable parts", ours.Seconds(), ref.Seconds(), "s", ratio, 1.2, true, false,
		fmt.Sprintf("without waiting for Core; with it %.0f ms (wait_ready %.0f ms); median of the rounds' ratios %s; own overhead %.0f ms",
			ms(med(func(s installSample) time.Duration { return s.total })), ms(med(func(s installSample) time.Duration { return s.wait })),
			formatRatios(ratios), ms(ours-ref)))
	benchLine("install", "first install vs downloads, load, start", med(func(s installSample) time.Duration { return s.total }).Seconds(), 0, "s", medianFloat(named), 1.2, true, true,
		"information: with Core's wait, against the three parts alone")

	// The registered node's rerun, no token, rerunReps times: it changes
	// nothing, so each run finds the same host; the median counts, and
	// the quartiles show how much the machine moved it.
	var cpus, walls []time.Duration
	var changed []string
	for range rerunReps {
		before := newChangeSnapshot(h)
		cmd := h.Command(ctx, append([]string{installer}, args...)...)
		_, wall, out, err := timePhases(cmd)
		if err != nil {
			b.Fatalf("rerun: %v\n%s", err, out)
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpus = append(cpus, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()))
		walls = append(walls, wall)
		changed = append(changed, before.changed(newChangeSnapshot(h))...)
	}
	cpu, wall := median(cpus), median(walls)
	sorted := slices.Sorted(slices.Values(cpus))
	var refs []time.Duration
	for range rerunReps {
		refs = append(refs, rerunReference(ctx, b, h, core, installer))
	}
	rref := median(refs)
	benchLine("rerun", "registered healthy rerun, local work (CPU)", cpu.Seconds(), rref.Seconds(), "s", cpu.Seconds()/rref.Seconds(), 1.3, true, false,
		fmt.Sprintf("median of %d reruns (quartiles %.0f–%.0f ms); wall %.0f ms, waiting on Core and disk %.0f ms; reference: two starts of the installer, cmp of the retained helper, sha256sum of the node's files, one curl to Core",
			len(cpus), ms(sorted[len(sorted)/4]), ms(sorted[len(sorted)*3/4]), ms(wall), ms(wall-cpu)))
	benchLine("rerun", "registered healthy rerun, files written", float64(len(changed)), 0, "files", float64(len(changed)), 0, true, false,
		strings.Join(changed, " "))
	if benchFailed {
		b.Error("a measure missed its goal (FAIL above)")
	}
	b.ReportMetric(ratio, "install-ratio")
	b.ReportMetric(ms(cpu), "rerun-cpu-ms")
	b.ReportMetric(float64(len(changed)), "rerun-writes")
}

// BenchmarkEndToEndInstallRealSize is the first install with a Runtime
// image at the platform's real size: 512 MiB of payload over 4 layers
// (plus the label layer; OAC_BENCH_REAL_MIB sets another size), built by
// oac-devcore at bench time, about 230 MiB compressed. It prints the
// phases and steps and the parts, then, without Core's wait:
//
//   - the ratio against the standard tools doing the same work in the same
//     run: curl of the same files (and sync), sha256sum -c of the artifacts
//     against manifest.json's digests, docker load -i of the same archive, and the
//     other unavoidable parts (goal ≤ 1.0);
//   - the ratio against the physical floor: a bare GET of the archive, then
//     docker load -i of it, and the other unavoidable parts (goal ≤ 1.15);
//   - the peak extra disk of the install (the free space of the test host's
//     /var/lib and of the engine's file system, sampled every 20 ms) against
//     what the installation leaves in the host (du of its private /etc,
//     /var/lib and /usr/local/sbin before and after: the node's files, the
//     helper copy, the records) plus the engine's own growth during
//     docker load -i (goal ≤ 1.0: no unpacked copy, nothing transient);
//   - the max RSS of the installer's process tree (goal ≤ 128 MiB).
//
// OAC_BENCH_REAL_ROUNDS rounds (default 1: each takes about half a
// minute), medians when more.
func BenchmarkEndToEndInstallRealSize(b *testing.B) {
	benchFailed = false // this benchmark's own measures decide
	if _, err := exec.LookPath("curl"); err != nil {
		b.Skip("bench install: needs curl(1) for the download reference")
	}
	payload := max(envInt("OAC_BENCH_REAL_MIB", 512), 1)
	bin, core, h := endToEnd(b, "--image-payload-mib", strconv.Itoa(payload), "--image-payload-layers", "4")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	installer := filepath.Join(bin, "oac-node-install")
	args := []string{"--source-url", core.url, "--core-url", core.url, "--provider", "docker",
		"--installation-id", core.installationID, "--core-ca", core.ca}
	cleanupEngine(b, core.installationID)
	b.Cleanup(func() { cleanupEngine(b, core.installationID) })
	samples, _ := installRounds(ctx, b, h, core, installer, args, max(envInt("OAC_BENCH_REAL_ROUNDS", 1), 1))
	last := samples[len(samples)-1]
	for n, d := range last.phases {
		benchLine("real-size", "phase "+n, d.Seconds(), 0, "s", 0, 0, false, true, "(last round)")
	}
	benchLine("real-size", "steps (ms, begin to done)", 0, 0, "s", 0, 0, false, true, last.steps+" (last round)")
	med := func(f func(installSample) time.Duration) time.Duration { return medianOf(samples, f) }
	parts := partTimes(samples)
	benchLine("real-size", "first install, parts", 0, 0, "s", 0, 0, false, true,
		fmt.Sprintf("medians of %d rounds: %s; sha256sum -c %.0f ms; bare GET of the archive %.0f ms; waiting for Core %.0f ms; total %.0f ms", len(samples), parts,
			ms(med(func(s installSample) time.Duration { return s.sums })), ms(med(func(s installSample) time.Duration { return s.bareGet })),
			ms(med(func(s installSample) time.Duration { return s.wait })), ms(med(func(s installSample) time.Duration { return s.total }))))
	ours := med(installSample.ours)
	tools := med(func(s installSample) time.Duration { return s.unavoidable() + s.sums })
	benchLine("real-size", "first install vs curl + sha256sum -c + docker load -i", ours.Seconds(), tools.Seconds(), "s", ours.Seconds()/tools.Seconds(), 1.0, true, false,
		fmt.Sprintf("%d MiB unpacked; without waiting for Core; the other unavoidable parts in both; own overhead %.0f ms", payload, ms(ours-tools)))
	floor := med(func(s installSample) time.Duration { return s.unavoidable() - s.downloads + s.bareGet })
	benchLine("real-size", "first install vs bare GET + docker load -i", ours.Seconds(), floor.Seconds(), "s", ours.Seconds()/floor.Seconds(), 1.15, true, false,
		"the physical floor: the archive fetched and loaded, nothing verified; the other unavoidable parts in both")
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	benchLine("real-size", "first install peak extra disk", mib(last.disk), mib(last.refDisk), "MiB", float64(last.disk)/float64(max(last.refDisk, 1)), 1.0, true, false,
		fmt.Sprintf("(last round) what the installation leaves in the host %.1f MiB + the engine's growth during docker load -i %.1f MiB; difference %+.0f KiB",
			mib(last.files), mib(last.refDisk-last.files), float64(last.disk-last.refDisk)/1024))
	benchLine("real-size", "first install max RSS (MiB, goal ≤ 128)", float64(last.rssKiB)/1024, 128, "MiB", float64(last.rssKiB)/1024/128, 1.0, true, false,
		"(last round) the installer's process tree, its service-account child included")
	if benchFailed {
		b.Error("a measure missed its goal (FAIL above)")
	}
}

// installSample is one round of the first-install measure.
type installSample struct {
	phases map[string]time.Duration
	steps  string
	total  time.Duration
	// wait is the installer's wait for Core's report (not its work).
	wait time.Duration
	// The unavoidable parts; start is systemd's own start of the unit
	// (in service, and one of the three parts named first).
	downloads, load, network, account, helper, register, service, start time.Duration
	// sums is sha256sum -c of the downloaded artifacts; bareGet a GET of the
	// Runtime archive alone (the real-size references).
	sums, bareGet time.Duration
	// disk is the install's peak extra disk; files what the installation
	// leaves in the host (du); refDisk files plus the engine's growth
	// during docker load -i.
	disk, files, refDisk int64
	// rssKiB is the max RSS of the installer's process tree.
	rssKiB int64
}

// installParts are the unavoidable parts, named as the bench prints them.
var installParts = []struct {
	name string
	of   func(installSample) time.Duration
}{
	{"downloads", func(s installSample) time.Duration { return s.downloads }},
	{"docker load", func(s installSample) time.Duration { return s.load }},
	{"network", func(s installSample) time.Duration { return s.network }},
	{"account", func(s installSample) time.Duration { return s.account }},
	{"helper copy", func(s installSample) time.Duration { return s.helper }},
	{"node registration", func(s installSample) time.Duration { return s.register }},
	{"systemctl enable and start", func(s installSample) time.Duration { return s.service }},
}

func (s installSample) ours() time.Duration { return s.total - s.wait }

func (s installSample) unavoidable() time.Duration {
	var d time.Duration
	for _, p := range installParts {
		d += p.of(s)
	}
	return d
}

// installRounds runs rounds installRound calls, each but the first on a new
// test host with the engine cleared of the last one's image and network,
// and returns the samples and the last host.
func installRounds(ctx context.Context, b *testing.B, h *testhost.Host, core *devcore, installer string, args []string, rounds int) ([]installSample, *testhost.Host) {
	b.Helper()
	var samples []installSample
	for i := range rounds {
		if i > 0 {
			if err := h.Teardown(); err != nil {
				b.Fatal(err)
			}
			cleanupEngine(b, core.installationID)
			h = testhost.Start(b)
		}
		samples = append(samples, installRound(ctx, b, h, core, installer, args))
	}
	return samples, h
}

// installRound installs the node on h with a new token, as the generated
// command does (the token on standard input), then measures each
// unavoidable part on the same console, engine and host.
func installRound(ctx context.Context, b *testing.B, h *testhost.Host, core *devcore, installer string, args []string) installSample {
	b.Helper()
	token := core.admin(b, "token")
	cmd := h.Command(ctx, append([]string{installer, "--enrollment-token-stdin"}, args...)...)
	cmd.Stdin = strings.NewReader(token + "\n")
	var s installSample
	var out string
	var err error
	hostDir := filepath.Dir(h.VarLib()) // the host's private /etc, /var/lib, /usr/local/sbin
	before, err := diskUsage(ctx, hostDir)
	if err != nil {
		b.Fatal(err)
	}
	disk := diskpeak.Start(append([]string{h.VarLib()}, dockerRoot(ctx)...)...)
	s.phases, s.total, out, err = timePhases(cmd)
	s.disk = disk.Stop()
	if err != nil {
		b.Fatalf("first install: %v\n%s", err, out)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.rssKiB = ru.Maxrss
	}
	s.wait = s.phases["Wait for Core connection and provider readiness"]
	if s.steps, err = benchSteps(filepath.Join(h.VarLib(), "oac-node-install", core.installationID, "install.journal")); err != nil {
		b.Fatal(err)
	}
	dl, err := benchDownloads(ctx, core)
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dl.dir)
	s.downloads, s.sums, s.bareGet = dl.took, dl.sums, dl.bareGet
	var grew int64
	s.load, grew, err = benchDockerLoad(ctx, dl.files["images/runtime.tar.gz"], dl.files["image id"])
	if err != nil {
		b.Fatal(err)
	}
	after, err := diskUsage(ctx, hostDir)
	if err != nil {
		b.Fatal(err)
	}
	s.files = after - before
	s.refDisk = s.files + grew
	if s.start, err = unitStartTime(ctx, h, "oac-node-"+core.installationID+".service"); err != nil {
		b.Fatal(err)
	}
	if s.network, err = benchNetworkCreate(ctx, core.installationID); err != nil {
		b.Fatal(err)
	}
	if s.account, err = hostTime(ctx, h, "useradd --system --user-group --no-create-home --home-dir /var/lib/oac-bench --shell /usr/sbin/nologin oac-bench"+
		" && usermod --append --groups docker oac-bench && sync /etc/passwd /etc/group /etc/shadow /etc/gshadow", "userdel oac-bench"); err != nil {
		b.Fatal(err)
	}
	if s.helper, err = hostTime(ctx, h, "cp "+installer+" /var/lib/oac-bench-helper && sync /var/lib/oac-bench-helper", "rm -f /var/lib/oac-bench-helper"); err != nil {
		b.Fatal(err)
	}
	if s.register, err = benchRegister(ctx, b, h, core); err != nil {
		b.Fatal(err)
	}
	if s.service, err = benchService(ctx, h); err != nil {
		b.Fatal(err)
	}
	return s
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

func medianFloat(f []float64) float64 {
	f = slices.Clone(f)
	slices.Sort(f)
	return f[len(f)/2]
}

func formatRatios(f []float64) string {
	var s []string
	for _, v := range f {
		s = append(s, fmt.Sprintf("%.3f", v))
	}
	return strings.Join(s, " ")
}

// benchSteps says how long each step of the install journal took, from
// its begin record to its done record, and the time between steps (the
// engine's own work and the journal's fsyncs).
func benchSteps(path string) (string, error) {
	recs, _, err := journal.Scan(path)
	if err != nil {
		return "", err
	}
	var begun, last time.Time
	var between time.Duration
	var steps []string
	for _, b := range recs {
		var r workflow.Record
		if err := json.Unmarshal(b, &r); err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		switch r.Type {
		case workflow.RecordBegin:
			if !last.IsZero() {
				between += r.Time.Sub(last)
			}
			begun = r.Time
		case workflow.RecordDone:
			steps = append(steps, fmt.Sprintf("%s %.0f", r.Step, ms(r.Time.Sub(begun))))
			last = r.Time
		}
	}
	return strings.Join(steps, ", ") + fmt.Sprintf("; between steps %.0f ms", ms(between)), nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// benchLine prints one result in oac-bench's format; a missed goal is
// printed FAIL and fails the benchmark's process through benchFailed.
func benchLine(measure, name string, ours, ref float64, unit string, ratio, goal float64, max, info bool, note string) {
	if info {
		if ours == 0 && ref == 0 {
			fmt.Printf("%-10s %-44s %s (information)\n", measure, name, note)
			return
		}
		fmt.Printf("%-10s %-44s ours %.4g %s  ratio %.3f (information) %s\n", measure, name, ours, unit, ratio, note)
		return
	}
	ok, cmp := ratio >= goal, "≥"
	if max {
		ok, cmp = ratio <= goal, "≤"
	}
	verdict := "ok"
	if !ok {
		verdict = "FAIL"
		benchFailed = true
	}
	line := fmt.Sprintf("%-10s %-44s ours %.4g %s  reference %.4g %s  ratio %.3f (goal %s %.2f) %s", measure, name, ours, unit, ref, unit, ratio, cmp, goal, verdict)
	if note != "" {
		line += "  [" + note + "]"
	}
	fmt.Println(line)
}

// benchFailed is set when a measure missed its goal; the benchmark then
// fails, and make bench with it. Each benchmark clears it first, so that
// one does not fail for another's measures.
var benchFailed bool

// timePhases runs cmd and returns how long each "==>" phase lasted (until
// the next one or the end), the total wall time and the combined output.
func timePhases(cmd *exec.Cmd) (map[string]time.Duration, time.Duration, string, error) {
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	var all strings.Builder
	phases := map[string]time.Duration{}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, "", err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		cur, since := "", start
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			l := sc.Text()
			all.WriteString(l + "\n")
			if label, ok := strings.CutPrefix(stripANSI(l), "==> "); ok {
				now := time.Now()
				if cur != "" {
					phases[cur] += now.Sub(since)
				}
				cur, since = strings.TrimSuffix(label, "..."), now
			}
		}
		if cur != "" {
			phases[cur] += time.Since(since)
		}
	}()
	err := cmd.Wait()
	total := time.Since(start)
	pw.Close()
	<-done
	return phases, total, all.String(), err
}

func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// downloaded is what benchDownloads fetched and measured.
type downloaded struct {
	dir   string            // the scratch directory; the caller removes it
	files map[string]string // artifact -> path; "image id" -> the Runtime's config digest
	took  time.Duration     // curl of every file, then sync
	sums  time.Duration     // sha256sum -c of them against SHA256SUMS
	// bareGet is a GET of the Runtime archive alone, into a file, with
	// nothing verified or synced: the floor of its download.
	bareGet time.Duration
}

// benchDownloads fetches the files the installer downloads for a Docker
// node — the metadata and every Docker artifact of the console's release —
// with curl, one after the other as the installer does, into a scratch
// directory, and syncs them; it then checks the artifacts with sha256sum -c
// against the digests manifest.json gives them, and times a bare GET of the
// archive alone.
func benchDownloads(ctx context.Context, core *devcore) (downloaded, error) {
	dir, err := os.MkdirTemp("", "oac-bench-downloads-")
	if err != nil {
		return downloaded{}, err
	}
	d := downloaded{dir: dir}
	get := func(path, dst string) error {
		out, err := exec.CommandContext(ctx, "curl", "-fsS", "--cacert", core.ca, "-o", dst, core.url+"/node-install/"+path).CombinedOutput()
		if err != nil {
			return fmt.Errorf("curl %s: %v: %s", path, err, out)
		}
		return nil
	}
	// The manifest names the artifacts; reading it is part of the work.
	start := time.Now()
	if err := get("manifest.json", filepath.Join(dir, "manifest.json")); err != nil {
		return d, err
	}
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return d, err
	}
	var m struct {
		Artifacts map[string]struct {
			Filename string `json:"filename"`
			SHA256   string `json:"sha256"`
		} `json:"artifacts"`
		Images map[string]string `json:"images"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return d, fmt.Errorf("manifest.json: %w", err)
	}
	var sums strings.Builder // the artifacts' digests, as sha256sum -c reads them
	for _, p := range []string{"SHA256SUMS", "runtime/seccomp.json"} {
		if err := get(p, filepath.Join(dir, filepath.Base(p))); err != nil {
			return d, err
		}
	}
	d.files = map[string]string{"image id": m.Images["runtime"]}
	for _, p := range []string{"native/bin/oac-node", "images/runtime.tar.gz"} {
		a, ok := m.Artifacts[p]
		if !ok {
			return d, fmt.Errorf("manifest.json has no artifact %s", p)
		}
		dst := filepath.Join(dir, a.Filename)
		if err := get("artifacts/"+a.Filename, dst); err != nil {
			return d, err
		}
		d.files[p] = dst
		fmt.Fprintf(&sums, "%s  %s\n", a.SHA256, a.Filename)
	}
	// The installer makes its files durable; so does the reference.
	if out, err := exec.CommandContext(ctx, "sync", "-f", dir).CombinedOutput(); err != nil {
		return d, fmt.Errorf("sync: %v: %s", err, out)
	}
	d.took = time.Since(start)

	if err := os.WriteFile(filepath.Join(dir, "artifacts.sha256"), []byte(sums.String()), 0o600); err != nil {
		return d, err
	}
	start = time.Now()
	check := exec.CommandContext(ctx, "sha256sum", "--quiet", "--strict", "-c", "artifacts.sha256")
	check.Dir = dir
	if out, err := check.CombinedOutput(); err != nil {
		return d, fmt.Errorf("sha256sum -c: %v: %s", err, out)
	}
	d.sums = time.Since(start)

	bare := filepath.Join(dir, "bare.tar.gz")
	start = time.Now()
	if err := get("artifacts/"+filepath.Base(d.files["images/runtime.tar.gz"]), bare); err != nil {
		return d, err
	}
	d.bareGet = time.Since(start)
	return d, os.Remove(bare)
}

// diskUsage is the disk space the files below dir take (du -s -B1).
func diskUsage(ctx context.Context, dir string) (int64, error) {
	out, err := exec.CommandContext(ctx, "du", "-s", "-x", "-B1", dir).Output()
	if err != nil {
		return 0, fmt.Errorf("du %s: %v", dir, err)
	}
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return 0, fmt.Errorf("du %s: no answer", dir)
	}
	return strconv.ParseInt(f[0], 10, 64)
}

// dockerRoot is the engine's root directory, when it says.
func dockerRoot(ctx context.Context) []string {
	out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.DockerRootDir}}").Output()
	if d := strings.TrimSpace(string(out)); err == nil && d != "" {
		return []string{d}
	}
	return nil
}

// benchDockerLoad removes the Runtime image the installer imported (no
// container uses it) and times `docker load` of the same archive, which
// puts it back; it also returns the engine's peak growth during the load.
func benchDockerLoad(ctx context.Context, archive, id string) (time.Duration, int64, error) {
	if out, err := exec.CommandContext(ctx, "docker", "image", "rm", "--no-prune", id).CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("docker image rm %s: %v: %s", id, err, out)
	}
	// The layers' blocks are free once the file system commits; so that
	// neither the time nor the disk measure sees that commit, sync first.
	if out, err := exec.CommandContext(ctx, "sync").CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("sync: %v: %s", err, out)
	}
	disk := diskpeak.Start(dockerRoot(ctx)...)
	start := time.Now()
	out, err := exec.CommandContext(ctx, "docker", "load", "-q", "-i", archive).CombinedOutput()
	took, grew := time.Since(start), disk.Stop()
	if err != nil {
		return 0, 0, fmt.Errorf("docker load: %v: %s", err, out)
	}
	return took, grew, nil
}

// unitStartTime is how long systemd took from starting the unit's process
// to reporting it active.
func unitStartTime(ctx context.Context, h *testhost.Host, unit string) (time.Duration, error) {
	res, err := h.Exec(ctx, "systemctl", "show", "-p", "InactiveExitTimestampMonotonic", "-p", "ActiveEnterTimestampMonotonic", unit)
	if err != nil || res.Status != 0 {
		return 0, fmt.Errorf("systemctl show %s: %v %s", unit, err, res.Stderr)
	}
	v := map[string]int64{}
	for _, l := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		k, val, _ := strings.Cut(l, "=")
		v[k], _ = strconv.ParseInt(val, 10, 64)
	}
	d := v["ActiveEnterTimestampMonotonic"] - v["InactiveExitTimestampMonotonic"]
	if v["ActiveEnterTimestampMonotonic"] == 0 || d < 0 {
		return 0, fmt.Errorf("systemctl show %s: %v", unit, v)
	}
	return time.Duration(d) * time.Microsecond, nil
}

// hostTime runs script in the test host under bash's time and returns its
// wall time (bash's own start is not in it), then runs cleanup untimed.
func hostTime(ctx context.Context, h *testhost.Host, script, cleanup string) (time.Duration, error) {
	res, err := h.Exec(ctx, "bash", "-c", "TIMEFORMAT=%3R; time { "+script+" ; } >/dev/null 2>/run/oac-bench.err || { cat /run/oac-bench.err; exit 1; }")
	if err == nil && res.Status != 0 {
		err = fmt.Errorf("%s: exit %d: %s%s", script, res.Status, res.Stdout, res.Stderr)
	}
	if cleanup != "" {
		if r, cerr := h.Exec(ctx, "bash", "-c", cleanup); err == nil && (cerr != nil || r.Status != 0) {
			err = fmt.Errorf("%s: %v %s", cleanup, cerr, r.Stderr)
		}
	}
	if err != nil {
		return 0, err
	}
	lines := strings.Split(strings.TrimSpace(string(res.Stderr)), "\n")
	sec, err := strconv.ParseFloat(lines[len(lines)-1], 64)
	if err != nil {
		return 0, fmt.Errorf("%s: bash's time printed %q", script, res.Stderr)
	}
	return time.Duration(sec * float64(time.Second)), nil
}

// benchNetworkCreate times the one Engine API call the network step makes,
// POST /networks/create of a bridge network with a label, through curl(1),
// and removes the network.
func benchNetworkCreate(ctx context.Context, id string) (time.Duration, error) {
	name := "oac-bench-" + id
	body := fmt.Sprintf(`{"Name":%q,"Driver":"bridge","Labels":{"io.oac.bench":%q}}`, name, id)
	start := time.Now()
	out, err := exec.CommandContext(ctx, "curl", "-fsS", "--unix-socket", "/var/run/docker.sock", "-H", "Content-Type: application/json",
		"-d", body, "http://docker/networks/create").CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("curl POST /networks/create: %v: %s", err, out)
	}
	if out, err := exec.CommandContext(ctx, "curl", "-fsS", "--unix-socket", "/var/run/docker.sock", "-X", "DELETE", "http://docker/networks/"+name).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("curl DELETE /networks/%s: %v: %s", name, err, out)
	}
	return d, nil
}

// benchRegister times the release's node program registering a second
// node with Core, as the register step runs it: the installed node's
// provider.json, a state directory of its own, a new token in a file.
func benchRegister(ctx context.Context, b *testing.B, h *testhost.Host, core *devcore) (time.Duration, error) {
	nodes, err := filepath.Glob(filepath.Join(h.VarLib(), "oac-node/.oac/nodes/*"))
	if err != nil || len(nodes) != 1 {
		return 0, fmt.Errorf("node roots in the test host: %v %v", nodes, err)
	}
	root := "/var/lib/oac-node/.oac/nodes/" + filepath.Base(nodes[0])
	tokenFile := fmt.Sprintf("/proc/%d/root/run/oac-bench.token", h.PID())
	if err := os.WriteFile(tokenFile, []byte(core.admin(b, "token")+"\n"), 0o600); err != nil {
		return 0, err
	}
	return hostTime(ctx, h, root+"/native/bin/oac-node register --config "+root+"/provider.json --state-dir /var/lib/oac-bench-state"+
		" --core-url "+core.url+" --name bench --enrollment-token-file /run/oac-bench.token --core-ca "+core.ca,
		"rm -rf /var/lib/oac-bench-state /run/oac-bench.token")
}

// benchService times enabling and starting a unit like the node's (a
// simple service wanted by multi-user.target) with systemctl(1), without
// the daemon-reload `systemctl enable` does by default: systemd loads a
// unit it never saw when it is started, and the installer reloads only
// when systemd says a unit changed on disk. Then it removes the unit.
func benchService(ctx context.Context, h *testhost.Host) (time.Duration, error) {
	unit := "[Unit]\nDescription=oac-bench\n\n[Service]\nType=simple\nExecStart=/bin/sleep infinity\n\n[Install]\nWantedBy=multi-user.target\n"
	if err := os.WriteFile(filepath.Join(h.Etc(), "systemd/system/oac-bench.service"), []byte(unit), 0o644); err != nil {
		return 0, err
	}
	return hostTime(ctx, h, "systemctl --no-reload enable oac-bench.service && systemctl start oac-bench.service",
		"systemctl disable --now oac-bench.service && rm /etc/systemd/system/oac-bench.service && systemctl daemon-reload")
}

// A changeSnapshot identifies every file of the test host's /etc, /var/lib
// and /run by inode, size and change time.
type changeSnapshot map[string]string

func newChangeSnapshot(h *testhost.Host) changeSnapshot {
	s := changeSnapshot{}
	run := fmt.Sprintf("/proc/%d/root/run", h.PID())
	// What systemd and D-Bus keep for themselves changes on its own; each
	// run adds the record of its output (runs/), which is no change of
	// the node.
	skip := map[string]bool{filepath.Join(h.VarLib(), "systemd"): true, filepath.Join(run, "systemd"): true,
		filepath.Join(run, "dbus"): true, filepath.Join(run, "log"): true, filepath.Join(run, "user"): true,
		filepath.Join(h.VarLib(), "oac-node-install", runsDir): true}
	for _, root := range []string{h.Etc(), h.VarLib(), run} {
		filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return nil
			}
			if skip[p] {
				return filepath.SkipDir
			}
			st := fi.Sys().(*syscall.Stat_t)
			s[p] = fmt.Sprintf("%d %d %d.%d %d.%d", st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
			return nil
		})
	}
	return s
}

// changed lists the paths created, removed or changed since s.
func (s changeSnapshot) changed(after changeSnapshot) []string {
	var d []string
	for p, v := range after {
		if s[p] != v {
			d = append(d, p)
		}
	}
	for p := range s {
		if _, ok := after[p]; !ok {
			d = append(d, p+" (removed)")
		}
	}
	sort.Strings(d)
	return d
}

// rerunReference runs, in h, the work a registered node's rerun cannot
// avoid, with standard tools, and returns the CPU time of their process
// tree (see BenchmarkEndToEndInstall).
func rerunReference(ctx context.Context, b *testing.B, h *testhost.Host, core *devcore, installer string) time.Duration {
	b.Helper()
	rel := layout.NodeRel(ident.InstallationID(core.installationID))
	data, err := os.ReadFile(filepath.Join(h.VarLib(), "oac-node", rel, layout.NodeIdentityFile))
	if err != nil {
		b.Fatal(err)
	}
	var id struct {
		Credential string `json:"credential"`
		Identity   struct {
			NodeID string `json:"node_id"`
		} `json:"identity"`
	}
	if err := json.Unmarshal(data, &id); err != nil {
		b.Fatal(err)
	}
	root := filepath.Join("/var/lib/oac-node", rel)
	script := fmt.Sprintf(`set -e
%[1]s version >/dev/null
%[1]s version >/dev/null
cmp %[1]s %[2]s/%[3]s
find %[2]s/%[4]s %[2]s/%[5]s %[2]s/%[6]s -type f -exec sha256sum {} + >/dev/null
curl -fsS --cacert %[7]s -H "Authorization: Bearer $OAC_CRED" "%[8]s/api/v1/sandbox-node/identity?node_id=%[9]s" >/dev/null
`, installer, root, layout.HelperFile, layout.RuntimeDir, layout.ImagesDir, layout.NativeDir, core.ca, core.url, id.Identity.NodeID)
	cmd := h.Command(ctx, "sh", "-c", script)
	cmd.Env = append(os.Environ(), "OAC_CRED="+id.Credential) // never in an argument
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("rerun reference: %v\n%s", err, out)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// medianOf is the median of f over the rounds' samples.
func medianOf(samples []installSample, f func(installSample) time.Duration) time.Duration {
	var d []time.Duration
	for _, s := range samples {
		d = append(d, f(s))
	}
	return median(d)
}

// partTimes is each unavoidable part's median over the rounds, for a line.
func partTimes(samples []installSample) string {
	var parts []string
	for _, p := range installParts {
		parts = append(parts, fmt.Sprintf("%s %.0f ms", p.name, ms(medianOf(samples, p.of))))
	}
	return strings.Join(parts, ", ")
}
