//go:build crashtest

package testhost

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A power cut keeps what a process inside made durable, loses the rest, and
// the boot after it starts the unit enabled inside, which was never started
// before the cut.
func TestPowerCutRevertsAndRebootStartsEnabledUnits(t *testing.T) {
	h := StartPowerCut(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const unit = "oac-testhost-powercut.service"
	script := `set -e
printf kept >/etc/oac-testhost-kept
sync /etc/oac-testhost-kept /etc
printf lost >/var/lib/oac-testhost-lost
cat >/etc/systemd/system/` + unit + ` <<EOF
[Unit]
Description=power-cut test unit
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/true
[Install]
WantedBy=multi-user.target
EOF
sync /etc/systemd/system/` + unit + `
systemctl enable ` + unit + ` 2>&1
sync /etc/systemd/system/multi-user.target.wants /etc/systemd/system
systemctl is-active ` + unit + ` || true`
	r, err := h.Exec(ctx, "sh", "-c", script)
	if err != nil || r.Status != 0 {
		t.Fatalf("prepare: %v, exit %d: %s%s", err, r.Status, r.Stdout, r.Stderr)
	}
	if !strings.Contains(string(r.Stdout), "inactive") {
		t.Fatalf("the unit runs before the power cut: %s", r.Stdout)
	}
	oldPID := h.PID()
	lost, err := h.PowerCut()
	if err != nil {
		t.Fatal(err)
	}
	if h.PID() == oldPID {
		t.Error("the same PID 1 after the power cut")
	}
	if !slices.Contains(lost, "var-lib/oac-testhost-lost") {
		t.Errorf("the cut did not report the unsynced file lost: %v", lost)
	}
	if _, err := os.Lstat(filepath.Join(h.VarLib(), "oac-testhost-lost")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file never made durable survived the cut: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(h.Etc(), "oac-testhost-kept")); err != nil || string(b) != "kept" {
		t.Errorf("the durable file after the cut: %q, %v", b, err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		r, err := h.Exec(ctx, "systemctl", "is-active", unit)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(string(r.Stdout)) == "active" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the boot after the cut did not start the enabled unit: %s", r.Stdout)
		}
	}
}
