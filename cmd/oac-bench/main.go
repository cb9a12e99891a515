// Command oac-bench measures the installer's speed targets as ratios against
// the physical limit or a standard tool, measured in the same run. Each
// measure lives in its own file and registers itself in init.
//
//	go run ./cmd/oac-bench            # every measure
//	go run ./cmd/oac-bench journal    # only the named ones
//
// It calls the shipped packages (journal, steps/host/download,
// steps/host/privsep, steps/record/...) the way the installer does, in
// temporary directories and against servers of its own; measures that need
// root (a service-account child) are skipped, saying so, without it. It
// asserts nothing and changes nothing outside its temporary directories.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
)

// A measure runs one comparison in dir (a scratch directory on the file
// system under test) and returns its result lines. It fails the run by
// returning an error, and reports a ratio over its goal with a "FAIL" line.
type measure struct {
	name string
	run  func(dir string) ([]Result, error)
}

// Result is one printed ratio: ours and the reference in their unit, and the
// goal the ratio must meet (Max: ratio ≤ Goal; otherwise ratio ≥ Goal).
type Result struct {
	Name      string
	Ours      float64
	Reference float64
	Unit      string
	Ratio     float64
	Goal      float64
	Max       bool
	Note      string
	// Info marks a figure printed for information, with no goal.
	Info bool
}

var measures []measure

var installerFlag = flag.String("installer", "", "oac-node-install binary for command measures (default bin/oac-node-install)")

func register(name string, run func(dir string) ([]Result, error)) {
	measures = append(measures, measure{name, run})
}

func main() {
	if mode := os.Getenv(runtimeChild); mode != "" {
		runtimeChildMain(mode)
		return
	}
	dir := flag.String("dir", "", "scratch directory (default: a new one under $TMPDIR)")
	flag.Parse()
	want := map[string]bool{}
	for _, a := range flag.Args() {
		want[a] = true
	}
	sort.Slice(measures, func(i, j int) bool { return measures[i].name < measures[j].name })
	failed := false
	var scratchDirs []string
	defer func() {
		for _, d := range scratchDirs {
			os.RemoveAll(d)
		}
		if failed {
			os.Exit(1)
		}
	}()
	for _, m := range measures {
		if len(want) > 0 && !want[m.name] {
			continue
		}
		scratch := *dir
		if scratch == "" {
			d, err := os.MkdirTemp("", "oac-bench-"+m.name+"-")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				failed = true
				return
			}
			scratchDirs = append(scratchDirs, d)
			scratch = d
		}
		results, err := m.run(scratch)
		if err != nil {
			fmt.Printf("%-10s ERROR %v\n", m.name, err)
			failed = true
			continue
		}
		for _, r := range results {
			ok := r.Ratio >= r.Goal
			cmp := "≥"
			if r.Max {
				ok = r.Ratio <= r.Goal
				cmp = "≤"
			}
			verdict := "ok"
			if r.Info {
				fmt.Printf("%-10s %-44s ours %.4g %s  reference %.4g %s  ratio %.3f (information)  [%s]\n",
					m.name, r.Name, r.Ours, r.Unit, r.Reference, r.Unit, r.Ratio, strings.TrimSpace(r.Note))
				continue
			}
			if !ok {
				verdict = "FAIL"
				failed = true
			}
			line := fmt.Sprintf("%-10s %-44s ours %.4g %s  reference %.4g %s  ratio %.3f (goal %s %.2f) %s",
				m.name, r.Name, r.Ours, r.Unit, r.Reference, r.Unit, r.Ratio, cmp, r.Goal, verdict)
			if r.Note != "" {
				line += "  [" + strings.TrimSpace(r.Note) + "]"
			}
			fmt.Println(line)
		}
	}
}
