package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/openagentcore/oac-node-install/steps/lease"
)

// leases: lease inspection over 1,000 generations against a bare Go loop
// that stats and reads the same record files. Both run over the same
// directory in the same run; the better of several rounds counts for each.
func init() {
	register("leases", func(dir string) ([]Result, error) {
		const generations = 1000
		gens := filepath.Join(dir, "generations")
		if err := os.MkdirAll(gens, 0o700); err != nil {
			return nil, err
		}
		os.Chmod(gens, 0o700)
		uid := os.Getuid()
		files, err := leasesFixture(gens, generations, uid)
		if err != nil {
			return nil, err
		}
		inspect := func() error {
			reports, err := lease.Inspect(gens, uid)
			if err != nil {
				return err
			}
			if len(reports) != generations {
				return fmt.Errorf("inspect reported %d generations, want %d", len(reports), generations)
			}
			for _, r := range reports {
				if r.Lease.State != lease.StateOK {
					return fmt.Errorf("generation %d: lease %s: %s", r.Generation, r.Lease.State, r.Lease.Reason)
				}
			}
			return nil
		}
		bare := func() error {
			for _, f := range files {
				if _, err := os.Stat(f); err != nil {
					return err
				}
				if _, err := os.ReadFile(f); err != nil {
					return err
				}
			}
			return nil
		}
		ours, err := bestOf(7, inspect)
		if err != nil {
			return nil, err
		}
		ref, err := bestOf(7, bare)
		if err != nil {
			return nil, err
		}
		oursMS, refMS := ours.Seconds()*1000, ref.Seconds()*1000
		return []Result{{
			Name:      "inspect 1,000 generations vs stat+read loop",
			Ours:      oursMS,
			Reference: refMS,
			Unit:      "ms",
			Ratio:     oursMS / refMS,
			Goal:      3.0,
			Max:       true,
			Note:      fmt.Sprintf("%d files", len(files)),
		}}, nil
	})
}

// leasesFixture creates n generations, each with a lease, its identity and a
// final configuration, and a mix of plans, collection journals and dropped
// markers, in the formats package lease writes. The files are written
// directly, without the per-record fsyncs of the real writers, so the
// fixture takes seconds; one generation is initialized through the package
// to keep the fixture honest. It returns every record file, for the
// reference loop.
func leasesFixture(dir string, n int, uid int) ([]string, error) {
	const installation = "0b5c8c4e-3f7a-4b8e-9d2a-6c1e5f0a7b3d"
	var files []string
	write := func(path, data string) error {
		files = append(files, path)
		return os.WriteFile(path, []byte(data), 0o600)
	}
	for g := int64(1); g <= int64(n); g++ {
		id := lease.Identity{InstallationID: installation, Generation: g, SpecificationDigest: fmt.Sprintf("%064x", g)}
		base := filepath.Join(dir, strconv.FormatInt(g, 10))
		marker := fmt.Sprintf(`"installation_id": %q, "generation": %d, "specification_digest": %q`, id.InstallationID, g, id.SpecificationDigest)
		if g == 1 {
			l, err := lease.Initialize(dir, id, uid)
			if err != nil {
				return nil, err
			}
			l.Close()
			files = append(files, base+".lease", base+".lease-identity")
		} else {
			if err := write(base+".lease", ""); err != nil {
				return nil, err
			}
			var st syscall.Stat_t
			if err := syscall.Stat(base+".lease", &st); err != nil {
				return nil, err
			}
			if err := write(base+".lease-identity", fmt.Sprintf("{\n  \"device\": %d,\n  %s,\n  \"inode\": %d\n}\n", st.Dev, marker, st.Ino)); err != nil {
				return nil, err
			}
		}
		config := fmt.Sprintf(`{"installation_id": %q, "generation": %d, "provider": "docker", "core_url": "https://core.example/api/v1", "docker": {"image": "sha256:%064x"}}`+"\n", installation, g, g)
		if err := write(base+".json", config); err != nil {
			return nil, err
		}
		var err error
		switch {
		case g%10 == 0:
			err = write(base+".preparing", fmt.Sprintf(`{%s, "import_started": %v}`+"\n", marker, g%20 == 0))
		case g%7 == 0:
			if err = write(base+".collecting", fmt.Sprintf(`{%s, "native_complete": true}`+"\n", marker)); err == nil {
				err = write(base+".dropped", fmt.Sprintf(`{%s}`+"\n", marker))
			}
		case g%5 == 0:
			err = write(base+".collecting", fmt.Sprintf(`{%s, "native_complete": false}`+"\n", marker))
		}
		if err != nil {
			return nil, err
		}
	}
	return files, nil
}

// bestOf runs fn rounds times and returns the fastest round.
func bestOf(rounds int, fn func() error) (time.Duration, error) {
	var times []time.Duration
	for range rounds {
		start := time.Now()
		if err := fn(); err != nil {
			return 0, err
		}
		times = append(times, time.Since(start))
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	return times[0], nil
}
