package crashharness

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/journal"
)

// The environment a crashtest build reads: CrashCount names a file to
// which the process appends the name of every failpoint it passes;
// CrashAt=N makes it SIGKILL itself at the N-th.
const (
	EnvCrashCount = "OAC_CRASH_COUNT"
	EnvCrashAt    = "OAC_CRASH_AT"
)

// CrashAt is the environment entry that kills a crashtest build at its
// n-th failpoint.
func CrashAt(n int) string { return fmt.Sprintf("%s=%d", EnvCrashAt, n) }

// CountTo is the environment entry that makes a crashtest build record the
// failpoints it passes in file.
func CountTo(file string) string { return EnvCrashCount + "=" + file }

// Point is one failpoint of an uninterrupted run: its number (CrashAt),
// its name, and the workflow state whose step it lies in (the state of the
// last journal record written before it; "" before the first begin).
type Point struct {
	N     int
	Name  string
	State string
}

func (p Point) String() string { return fmt.Sprintf("point %d %s in %s", p.N, p.Name, p.State) }

// readCount reads the failpoint names a run recorded in countFile.
func readCount(countFile string) ([]string, error) {
	data, err := os.ReadFile(countFile)
	if err == nil && len(data) == 0 {
		err = errors.New("the run passed none")
	}
	if err != nil {
		return nil, fmt.Errorf("no failpoints recorded (is the process built with -tags crashtest?): %w", err)
	}
	return strings.Fields(string(data)), nil
}

// Points reads the failpoints an uninterrupted run recorded in countFile
// and places each in its step by the records of the journal at
// journalPath: the k-th journal record's points are the k-th
// journal-before-write, -before-sync and -after-sync.
func Points(t testing.TB, countFile, journalPath string) []Point {
	t.Helper()
	names, err := readCount(countFile)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := journal.Scan(journalPath)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, r := range recs {
		var rec struct {
			State string `json:"state"`
		}
		json.Unmarshal(r, &rec)
		states = append(states, rec.State)
	}
	var out []Point
	k, state := 0, ""
	for i, name := range names {
		if name == "journal-before-write" {
			if k < len(states) && states[k] != "" {
				state = states[k]
			}
			k++
		}
		out = append(out, Point{N: i + 1, Name: name, State: state})
	}
	return out
}

// PointMap is the points' ranges per state: "1-3 (header) 4-9 preflight …".
func PointMap(pts []Point) string {
	var b strings.Builder
	for i := 0; i < len(pts); {
		j := i
		for j+1 < len(pts) && pts[j+1].State == pts[i].State {
			j++
		}
		name := pts[i].State
		if name == "" {
			name = "(header)"
		}
		fmt.Fprintf(&b, " %d-%d %s", pts[i].N, pts[j].N, name)
		i = j + 1
	}
	return strings.TrimSpace(b.String())
}

// The environment Sample reads.
const (
	// EnvEvery=k overrides Sampling.Every; 1 runs every point.
	EnvEvery = "OAC_E2E_CRASH_EVERY"
	// EnvMax=m overrides Sampling.Max; 0 is no cap.
	EnvMax = "OAC_E2E_CRASH_MAX"
	// EnvPoints=3,7 runs only the points numbered.
	EnvPoints = "OAC_E2E_CRASH_POINTS"
	// EnvPart=k/n runs only the k-th of n disjoint parts of the points
	// (0 ≤ k < n) before the sampling, so that n runs with k = 0 … n-1
	// cover every point.
	EnvPart = "OAC_E2E_CRASH_PART"
)

// Sampling says which points Sample picks.
type Sampling struct {
	// Every picks every Every-th point (coprime to 3, so that a record's
	// before-write, before-sync and after-sync points all occur); 1 or
	// less picks all.
	Every int
	// Max caps the points picked, spread evenly (0: no cap).
	Max int
	// Always are states every point of which is picked.
	Always []string
}

// Sample picks the points to run by s, overridden by the environment
// (EnvEvery, EnvMax, EnvPoints, EnvPart), and logs what it picked.
func Sample(t testing.TB, pts []Point, s Sampling) []Point {
	t.Helper()
	every, max := envInt(EnvEvery, s.Every), s.Max
	if v := envInt(EnvMax, max); v >= 0 {
		max = v
	}
	if only := os.Getenv(EnvPoints); only != "" {
		var out []Point
		for _, f := range strings.Split(only, ",") {
			if n, err := strconv.Atoi(f); err == nil && n >= 1 && n <= len(pts) {
				out = append(out, pts[n-1])
			}
		}
		t.Logf("sample: points %v of %d (%s)", only, len(pts), EnvPoints)
		return out
	}
	if k, n, ok := part(t); ok {
		var in []Point
		for _, p := range pts {
			if (p.N-1)%n == k {
				in = append(in, p)
			}
		}
		t.Logf("sample: part %d of %d (%s=%d/%d): the %d points whose number minus one is %d modulo %d, of %d",
			k+1, n, EnvPart, k, n, len(in), k, n, len(pts))
		pts = in
	}
	if every <= 1 {
		return pts
	}
	var must, rest []Point
	for i, p := range pts {
		switch {
		case slices.Contains(s.Always, p.State):
			must = append(must, p)
		case i%every == 0:
			rest = append(rest, p)
		}
	}
	if max > 0 && len(must)+len(rest) > max {
		keep := max - len(must)
		if keep < 0 {
			keep = 0
		}
		var thin []Point
		for i := 0; i < keep; i++ {
			thin = append(thin, rest[i*len(rest)/keep])
		}
		rest = thin
	}
	out := append(must, rest...)
	sort.Slice(out, func(i, j int) bool { return out[i].N < out[j].N })
	t.Logf("sample: %d of %d points (every %d-th, all of %v, cap %d)", len(out), len(pts), every, s.Always, max)
	return out
}

// part reads EnvPart=k/n.
func part(t testing.TB) (k, n int, ok bool) {
	v := os.Getenv(EnvPart)
	if v == "" {
		return 0, 0, false
	}
	a, b, found := strings.Cut(v, "/")
	k, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !found || err1 != nil || err2 != nil || n < 1 || k < 0 || k >= n {
		t.Fatalf("%s=%q: want k/n with 0 ≤ k < n", EnvPart, v)
	}
	return k, n, true
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// Tally is what a suite of crash points found, and where its time went,
// by phase, in the order the phases first occurred.
type Tally struct {
	// Resumed, Refused and Passed count the points whose rerun completed,
	// whose rerun refused for inspection, and that the process passed
	// without dying; Lost those whose power cut lost something.
	Resumed, Refused, Passed, Lost int
	// N counts the points run.
	N int

	start  time.Time
	phases map[string]time.Duration
	order  []string
}

// NewTally starts a tally now.
func NewTally() *Tally { return &Tally{start: time.Now(), phases: map[string]time.Duration{}} }

// Timed starts timing one phase; the returned func ends it.
func (c *Tally) Timed(phase string) func() {
	start := time.Now()
	return func() {
		if _, ok := c.phases[phase]; !ok {
			c.order = append(c.order, phase)
		}
		c.phases[phase] += time.Since(start)
	}
}

// Point runs one point as the subtest "point-NNN" (Run).
func (c *Tally) Point(t *testing.T, p Point, body func(t *testing.T)) {
	c.Run(t, fmt.Sprintf("point-%03d", p.N), body)
}

// Run runs one point as the subtest name: body, then t's cleanups, timed
// as "teardown".
func (c *Tally) Run(t *testing.T, name string, body func(t *testing.T)) {
	t.Run(name, func(t *testing.T) {
		var end func()
		t.Cleanup(func() { end() })
		defer func() { end = c.Timed("teardown") }()
		c.N++
		body(t)
	})
}

// Log logs the counts and the time per point, in total and by phase.
func (c *Tally) Log(t testing.TB, mode string) {
	t.Helper()
	d := c.Elapsed()
	t.Logf("%s: %d points: %d resumed, %d refused for inspection, %d passed without dying, %d lost data at the cut; %s in total, %s per point",
		mode, c.N, c.Resumed, c.Refused, c.Passed, c.Lost, d.Round(time.Second), (d / time.Duration(max(c.N, 1))).Round(100*time.Millisecond))
	t.Logf("%s: per point%s; other %s", mode, c.PerPoint(), c.Other())
}

// Elapsed is the time since the tally started.
func (c *Tally) Elapsed() time.Duration { return time.Since(c.start) }

// PerPoint is the time per point of each phase, in the order the phases
// first occurred: "; boot 1.20s; killed run 3.10s …".
func (c *Tally) PerPoint() string {
	var b strings.Builder
	for _, ph := range c.order {
		fmt.Fprintf(&b, "; %s %s", ph, (c.phases[ph] / time.Duration(max(c.N, 1))).Round(10*time.Millisecond))
	}
	return b.String()
}

// Other is the time per point that no phase timed.
func (c *Tally) Other() time.Duration {
	rest := c.Elapsed()
	for _, v := range c.phases {
		rest -= v
	}
	return (rest / time.Duration(max(c.N, 1))).Round(10 * time.Millisecond)
}
