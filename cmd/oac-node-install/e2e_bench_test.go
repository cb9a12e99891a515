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
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/testhost"
)

// The installation measures of `make bench` (CONTRACT-free: they only read
// what the installer prints and what the host shows). Both run the real
// binary as root in the test host against oac-devcore over TLS, as the
// end-to-end tests do, and report in oac-bench's line format.
//
// First install: the installer's wall time, per phase (from the moment
// each "==>" line is printed), against the sum of its unavoidable parts
// measured in the same run on the same machine: downloading the same files
// from the same console with curl(1), `docker load` of the same Runtime
// archive into the same engine, and the time systemd took to start the
// unit (its InactiveExit→ActiveEnter timestamps). Waiting until Core reports
// the node connected and ready is the node program's and Core's time, not
// the installer's: it is printed, and the ratio is given with and without
// it.
//
// Rerun of the registered, healthy node: wall time, the CPU time of the
// whole process tree (the installer and every child it waited for, from
// wait4's rusage) as its local work, the rest as waiting on Core and the
// disk, and how many files under /etc, /var/lib and /run changed (goal 0).
//
//	go test -tags e2e -run '^$' -bench EndToEndInstall -benchtime 1x ./cmd/oac-node-install/

func BenchmarkEndToEndInstall(b *testing.B) {
	if _, err := exec.LookPath("curl"); err != nil {
		b.Skip("bench install: needs curl(1) for the download reference")
	}
	bin, core, h := endToEnd(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	installer := filepath.Join(bin, "oac-node-install")
	args := []string{"--source-url", core.url, "--core-url", core.url, "--provider", "docker",
		"--installation-id", core.installationID, "--core-ca", core.ca}

	// First install, the token on standard input as the generated command
	// passes it.
	token := core.admin(b, "token")
	cmd := h.Command(ctx, append([]string{installer, "--enrollment-token-stdin"}, args...)...)
	cmd.Stdin = strings.NewReader(token + "\n")
	phases, total, out, err := timePhases(cmd)
	if err != nil {
		b.Fatalf("first install: %v\n%s", err, out)
	}
	// Unavoidable parts, measured now, on the same console and engine.
	dl, files, err := benchDownloads(ctx, core)
	if err != nil {
		b.Fatal(err)
	}
	load, err := benchDockerLoad(ctx, files["images/runtime.tar.gz"], files["image id"])
	if err != nil {
		b.Fatal(err)
	}
	unit := "oac-node-" + core.installationID + ".service"
	start, err := unitStartTime(ctx, h, unit)
	if err != nil {
		b.Fatal(err)
	}
	wait := phases["Wait for Core connection and provider readiness"]
	unavoidable := dl + load + start
	names := make([]string, 0, len(phases))
	for n := range phases {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return phases[names[i]] > phases[names[j]] })
	for _, n := range names {
		benchLine("install", "phase "+n, phases[n].Seconds(), 0, "s", 0, 0, false, true, "")
	}
	benchLine("install", "first install, parts", 0, 0, "s", 0, 0, false, true,
		fmt.Sprintf("downloads %.0f ms, docker load %.0f ms, systemd start %.0f ms, waiting for Core %.0f ms, total %.0f ms",
			ms(dl), ms(load), ms(start), ms(wait), ms(total)))
	ratio := total.Seconds() / unavoidable.Seconds()
	benchLine("install", "first install vs unavoidable parts", total.Seconds(), unavoidable.Seconds(), "s", ratio, 1.2, true, false, "")
	ratioLocal := (total - wait).Seconds() / unavoidable.Seconds()
	benchLine("install", "first install without Core's wait", (total - wait).Seconds(), unavoidable.Seconds(), "s", ratioLocal, 1.2, true, true, "")

	// The registered node's rerun: no token.
	before := newChangeSnapshot(h)
	cmd = h.Command(ctx, append([]string{installer}, args...)...)
	_, wall, out, err := timePhases(cmd)
	if err != nil {
		b.Fatalf("rerun: %v\n%s", err, out)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	changed := before.changed(newChangeSnapshot(h))
	benchLine("rerun", "registered healthy rerun, local work (CPU)", cpu.Seconds(), 0.1, "s", cpu.Seconds()/0.1, 1, true, false,
		fmt.Sprintf("wall %.0f ms, waiting on Core and disk %.0f ms", ms(wall), ms(wall-cpu)))
	benchLine("rerun", "registered healthy rerun, files written", float64(len(changed)), 0, "files", float64(len(changed)), 0, true, false,
		strings.Join(changed, " "))
	if benchFailed {
		b.Error("a measure missed its goal (FAIL above)")
	}
	b.ReportMetric(ratio, "install-ratio")
	b.ReportMetric(ms(cpu), "rerun-cpu-ms")
	b.ReportMetric(float64(len(changed)), "rerun-writes")
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
// fails, and make bench with it.
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

// benchDownloads fetches the files the installer downloads for a Docker
// node — the metadata and every Docker artifact of the console's release —
// with curl, one after the other as the installer does, into a scratch
// directory; it returns the time taken and where each artifact landed.
func benchDownloads(ctx context.Context, core *devcore) (time.Duration, map[string]string, error) {
	dir, err := os.MkdirTemp("", "oac-bench-downloads-")
	if err != nil {
		return 0, nil, err
	}
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
		return 0, nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return 0, nil, err
	}
	var m struct {
		Artifacts map[string]struct {
			Filename string `json:"filename"`
		} `json:"artifacts"`
		Images map[string]string `json:"images"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return 0, nil, fmt.Errorf("manifest.json: %w", err)
	}
	for _, p := range []string{"SHA256SUMS", "runtime/seccomp.json"} {
		if err := get(p, filepath.Join(dir, filepath.Base(p))); err != nil {
			return 0, nil, err
		}
	}
	files := map[string]string{"image id": m.Images["runtime"]}
	for _, p := range []string{"native/bin/oac-node", "images/runtime.tar.gz"} {
		a, ok := m.Artifacts[p]
		if !ok {
			return 0, nil, fmt.Errorf("manifest.json has no artifact %s", p)
		}
		dst := filepath.Join(dir, a.Filename)
		if err := get("artifacts/"+a.Filename, dst); err != nil {
			return 0, nil, err
		}
		files[p] = dst
	}
	// The installer makes its files durable; so does the reference.
	if out, err := exec.CommandContext(ctx, "sync", "-f", dir).CombinedOutput(); err != nil {
		return 0, nil, fmt.Errorf("sync: %v: %s", err, out)
	}
	return time.Since(start), files, nil
}

// benchDockerLoad removes the Runtime image the installer imported (no
// container uses it) and times `docker load` of the same archive, which
// puts it back.
func benchDockerLoad(ctx context.Context, archive, id string) (time.Duration, error) {
	if out, err := exec.CommandContext(ctx, "docker", "image", "rm", "--no-prune", id).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("docker image rm %s: %v: %s", id, err, out)
	}
	start := time.Now()
	if out, err := exec.CommandContext(ctx, "docker", "load", "-q", "-i", archive).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("docker load: %v: %s", err, out)
	}
	return time.Since(start), nil
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

// A changeSnapshot identifies every file of the test host's /etc, /var/lib
// and /run by inode, size and change time.
type changeSnapshot map[string]string

func newChangeSnapshot(h *testhost.Host) changeSnapshot {
	s := changeSnapshot{}
	run := fmt.Sprintf("/proc/%d/root/run", h.PID())
	// What systemd and D-Bus keep for themselves changes on its own.
	skip := map[string]bool{filepath.Join(h.VarLib(), "systemd"): true, filepath.Join(run, "systemd"): true,
		filepath.Join(run, "dbus"): true, filepath.Join(run, "log"): true, filepath.Join(run, "user"): true}
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
