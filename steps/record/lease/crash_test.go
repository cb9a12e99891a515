//go:build crashtest

package lease

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCrashDuringInitialize kills a real process (this test binary,
// re-executed) with SIGKILL at every failpoint of Initialize and checks what
// a restart finds: killed after the lease was created and before its
// identity was durable, the lease is refused forever and Inspect reports
// identity-missing (also when killed with the identity record written but
// not yet renamed into place); killed after the identity, the lease opens.
func TestCrashDuringInitialize(t *testing.T) {
	if dir := os.Getenv("LEASE_TEST_CRASH_DIR"); dir != "" {
		l, err := Initialize(dir, testID(1), uid)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		l.Close()
		os.Exit(0)
	}
	run := func(t *testing.T, dir string, env ...string) error {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashDuringInitialize$")
		cmd.Env = append(os.Environ(), append(env, "LEASE_TEST_CRASH_DIR="+dir)...)
		cmd.Stderr = os.Stderr
		return cmd.Run()
	}
	countFile := filepath.Join(t.TempDir(), "points")
	if err := run(t, genDir(t), "OAC_CRASH_COUNT="+countFile); err != nil {
		t.Fatalf("uninterrupted run: %v", err)
	}
	data, _ := os.ReadFile(countFile)
	points := strings.Fields(string(data))
	if len(points) < 2 || points[0] != "lease-created" {
		t.Fatalf("failpoints %v, want lease-created first", points)
	}
	for i, point := range points {
		t.Run(point, func(t *testing.T) {
			dir := genDir(t)
			err := run(t, dir, fmt.Sprintf("OAC_CRASH_AT=%d", i+1))
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child was not killed at %s: %v", point, err)
			}
			// The rerun never re-creates or adopts anything.
			if _, err := Initialize(dir, testID(1), uid); !errors.Is(err, ErrLeaseExists) {
				t.Fatalf("rerun Initialize after a crash at %s: %v", point, err)
			}
			reports, err := Inspect(dir, uid)
			if err != nil || len(reports) != 1 {
				t.Fatalf("Inspect: %v %v", reports, err)
			}
			l, err := Open(dir, testID(1), uid)
			switch point {
			case "lease-created", "record-before-rename":
				// The identity is not durable before its rename.
				if !errors.Is(err, ErrIdentityMissing) {
					t.Fatalf("Open after a crash at %s: %v, want ErrIdentityMissing", point, err)
				}
				if reports[0].Lease.State != StateIdentityMissing || len(reports[0].Next) == 0 {
					t.Errorf("Inspect: %+v", reports[0])
				}
			default:
				if err != nil {
					t.Fatalf("Open after a crash at %s: %v", point, err)
				}
				l.Close()
				if reports[0].Lease.State != StateOK {
					t.Errorf("Inspect: %+v", reports[0])
				}
			}
		})
	}
}
