package privsep

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// signalState is what the "signals" role reports.
type signalState struct {
	Ignored       bool // signal.Ignored(SIGHUP)
	KernelIgnores bool // SIGHUP in SigIgn of /proc/self/status
}

// ignoresHUP reports whether the kernel's disposition of SIGHUP for this
// process is to ignore it.
func ignoresHUP() bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if mask, ok := strings.CutPrefix(sc.Text(), "SigIgn:"); ok {
			bits, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
			return err == nil && bits&1 != 0 // SIGHUP is signal 1
		}
	}
	return false
}

// envNohup makes the test binary a parent started under nohup: it runs the
// "signals" role as nobody with the given home and prints whether it
// ignores SIGHUP itself while the child runs, then the child's answer.
const envNohup = "OAC_PRIVSEP_TEST_NOHUP_HOME"

func nohupParent(home string) int {
	b, err := Capture()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	res, err := Run(context.Background(), Options{Binary: b, UID: nobody, GID: nogroup, Home: home, Role: "signals"})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	// Run has returned: what it did to the disposition while the child
	// ran shows in what the child inherited.
	fmt.Printf("parent ignores=%v after\n", ignoresHUP())
	fmt.Printf("child %s\n", res.Value)
	return 0
}

// TestChildKeepsIgnoredSIGHUP starts a parent under nohup (SIGHUP ignored)
// and expects the child to inherit and keep ignoring SIGHUP, as the parent
// does.
func TestChildKeepsIgnoredSIGHUP(t *testing.T) {
	needRoot(t)
	cmd := exec.Command("/bin/sh", "-c", `trap '' HUP; exec "$0" -test.run='^$'`, os.Args[0])
	cmd.Env = append(os.Environ(), envNohup+"="+nobodyHome(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("parent under nohup: %v; output %q", err, out)
	}
	var parentIgnores bool
	var child signalState
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch {
		case strings.HasPrefix(line, "parent ignores="):
			parentIgnores = strings.HasPrefix(line, "parent ignores=true")
		case strings.HasPrefix(line, "child "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "child ")), &child); err != nil {
				t.Fatalf("child answer %q: %v", line, err)
			}
		}
	}
	if !parentIgnores {
		t.Errorf("the parent no longer ignores SIGHUP; output %q", out)
	}
	if !child.Ignored || !child.KernelIgnores {
		t.Errorf("child: signal.Ignored(SIGHUP) %v, kernel ignores SIGHUP %v; want both true", child.Ignored, child.KernelIgnores)
	}
}

// envReportSignals makes the test binary print InterruptSignals and exit.
const envReportSignals = "OAC_PRIVSEP_TEST_REPORT_SIGNALS"

func TestInterruptSignalsLeavesOutIgnored(t *testing.T) {
	for _, tc := range []struct {
		name, script, want string
	}{
		{"nohup", `trap '' HUP; exec "$0"`, "[interrupt terminated]"},
		{"SIGINT ignored", `trap '' INT; exec "$0"`, "[hangup terminated]"},
		{"none ignored", `trap - HUP INT TERM; exec "$0"`, "[interrupt hangup terminated]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", "-c", tc.script, os.Args[0])
			cmd.Env = append(os.Environ(), envReportSignals+"=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v; output %q", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != tc.want {
				t.Errorf("InterruptSignals %s, want %s", got, tc.want)
			}
		})
	}
}
