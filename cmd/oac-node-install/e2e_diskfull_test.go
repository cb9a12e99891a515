//go:build e2e && crashtest

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/diskfull"
)

// The disk-full tests (make e2e-enospc, -tags e2e,crashtest): each host's
// copies of /etc and /var/lib live on the disk-full file system. A run of
// the uninterrupted command counts the operations that need space on one
// of two disks — all of /etc, or root's journal directory
// /var/lib/oac-node-install — and each point k runs the command with that
// disk full from its k-th such operation on. Then the space comes back and
// the same command is run again: it must converge on what an uninterrupted
// run leaves, and a failed run that says "Nothing was changed." must have
// changed nothing.
//
// Selection: OAC_E2E_ENOSPC_POINTS=3,17 runs those points (of every disk),
// OAC_E2E_ENOSPC_EVERY=k every k-th point (default 1: all),
// OAC_E2E_ENOSPC_PART=i/n the i-th of n disjoint parts (CI rotates them).

// enospcDisk is where the disk fills: the host's copy (testhost.FullDisk)
// and the subtree below it that counts.
type enospcDisk struct {
	name, copy, under string
}

var enospcDisks = []enospcDisk{
	{"etc", "etc", ""},
	{"journal", "var-lib", "oac-node-install"},
}

func newDiskFullRig(t *testing.T) *crashRig {
	t.Helper()
	if err := diskfull.Available(); err != nil {
		t.Skipf("end-to-end disk full: %v", err)
	}
	r := newCrashRig(t)
	r.diskFull = true
	return r
}

// enospcPoints picks the points 1..n to run by the environment.
func enospcPoints(t *testing.T, n int) []int {
	t.Helper()
	var pts []int
	if only := os.Getenv("OAC_E2E_ENOSPC_POINTS"); only != "" {
		for _, f := range strings.Split(only, ",") {
			if k, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && k >= 1 && k <= n {
				pts = append(pts, k)
			}
		}
		return pts
	}
	every := max(envInt("OAC_E2E_ENOSPC_EVERY", 1), 1)
	part, parts := 0, 1
	if v := os.Getenv("OAC_E2E_ENOSPC_PART"); v != "" {
		if _, err := fmt.Sscanf(v, "%d/%d", &part, &parts); err != nil || parts < 1 || part < 0 || part >= parts {
			t.Fatalf("OAC_E2E_ENOSPC_PART=%q: want i/n with 0 <= i < n", v)
		}
	}
	for k := 1; k <= n; k++ {
		if k%every == 0 && k%parts == part {
			pts = append(pts, k)
		}
	}
	return pts
}

// arm fills disk d of h from its k-th operation on (k = 0: counts only).
func (h *crashHost) arm(d enospcDisk, k int) { h.FullDisk(d.copy).Arm(d.under, k) }

func (h *crashHost) spaceBack() {
	for _, d := range enospcDisks {
		h.FullDisk(d.copy).SpaceBack()
	}
}

// fullRun runs the command on a full disk and checks what it says: a
// failure, or a success when the disk filled after its last write; a
// failure that says "Nothing was changed." changed nothing.
func (h *crashHost) fullRun(t *testing.T, d enospcDisk, k int, run func(env ...string) runResult) runResult {
	t.Helper()
	before := h.tree(t, "")
	h.arm(d, k)
	res := run()
	failed := h.FullDisk(d.copy).Failed()
	h.spaceBack()
	op := h.FullDisk(d.copy).Op(k)
	t.Logf("%s full from operation %d (%s): exit %d, %d operations refused", d.name, k, op, res.status, failed)
	if res.status != 0 && strings.Contains(res.out, "Nothing was changed.") {
		if diff := before.diff(h.tree(t, ""), nil); len(diff) > 0 {
			t.Errorf("%s point %d (%s): the run said nothing was changed, yet:\n%s\n%s", d.name, k, op, strings.Join(diff, "\n"), res)
		}
	}
	if res.status == 0 && failed > 0 && !strings.Contains(res.out, "warning") {
		t.Logf("%s point %d: succeeded although %d operations were refused", d.name, k, failed)
	}
	return res
}

func TestEndToEndDiskFullInstall(t *testing.T) {
	r := newDiskFullRig(t)
	var ref reference
	counts := map[string]int{}
	t.Run("uninterrupted", func(t *testing.T) {
		h := r.boot(t)
		for _, d := range enospcDisks {
			h.arm(d, 0)
		}
		if res := h.install(t); res.status != 0 {
			t.Fatalf("uninterrupted install: %s", res)
		}
		for _, d := range enospcDisks {
			counts[d.name] = h.FullDisk(d.copy).Count()
		}
		h.spaceBack()
		ref.tree = h.tree(t, h.nodeID(t))
		ref.outcome = h.outcome(t, "install")
		ref.records = h.records(t)
	})
	if len(counts) != len(enospcDisks) {
		t.FailNow()
	}
	r.noteImage(t)
	for _, d := range enospcDisks {
		pts := enospcPoints(t, counts[d.name])
		t.Logf("install: %s: %d operations need space; running %d points", d.name, counts[d.name], len(pts))
		c := r.counts()
		for _, k := range pts {
			c.Run(t, fmt.Sprintf("%s-%03d", d.name, k), func(t *testing.T) {
				h := r.boot(t)
				res := h.fullRun(t, d, k, func(env ...string) runResult { return h.install(t, env...) })
				if res.status == 0 {
					c.Passed++
				}
				res = h.rerun(t, h.install)
				if res.status != 0 {
					r.skipIfImageLost(t)
					t.Fatalf("%s point %d: the rerun with space back failed: %s", d.name, k, res)
				}
				h.converged(t, ref, fmt.Sprintf("%s point %d", d.name, k))
				c.Resumed++
			})
		}
		c.Log(t, "install, "+d.name+" full")
	}
}

func TestEndToEndDiskFullUninstall(t *testing.T) {
	r := newDiskFullRig(t)
	counts := map[string]int{}
	t.Run("uninterrupted", func(t *testing.T) {
		h := r.boot(t)
		if res := h.install(t); res.status != 0 {
			t.Fatalf("install: %s", res)
		}
		for _, d := range enospcDisks {
			h.arm(d, 0)
		}
		if res := h.uninstall(t, false); res.status != 0 {
			t.Fatalf("uninterrupted uninstall: %s", res)
		}
		for _, d := range enospcDisks {
			counts[d.name] = h.FullDisk(d.copy).Count()
		}
		h.spaceBack()
		h.uninstalled(t, "uninterrupted uninstall")
	})
	if len(counts) != len(enospcDisks) {
		t.FailNow()
	}
	r.noteImage(t)
	for _, d := range enospcDisks {
		pts := enospcPoints(t, counts[d.name])
		t.Logf("uninstall: %s: %d operations need space; running %d points", d.name, counts[d.name], len(pts))
		c := r.counts()
		for _, k := range pts {
			c.Run(t, fmt.Sprintf("%s-%03d", d.name, k), func(t *testing.T) {
				h := r.boot(t)
				if res := h.install(t); res.status != 0 {
					r.skipIfImageLost(t)
					t.Fatalf("install: %s", res)
				}
				res := h.fullRun(t, d, k, func(env ...string) runResult { return h.uninstall(t, false, env...) })
				if res.status == 0 {
					c.Passed++
				}
				res = h.rerun(t, func(t *testing.T, env ...string) runResult { return h.uninstall(t, false, env...) })
				if res.status != 0 {
					t.Fatalf("%s point %d: the uninstall rerun with space back failed: %s", d.name, k, res)
				}
				h.uninstalled(t, fmt.Sprintf("%s point %d", d.name, k))
				c.Resumed++
			})
		}
		c.Log(t, "uninstall, "+d.name+" full")
	}
}
