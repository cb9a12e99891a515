package testengine_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/record/image/imagetest"
	"github.com/openagentcore/oac-node-install/steps/testsupport/testengine"
)

// machineEngine is what the machine's own engine holds (its networks and
// image ids, sorted), "" when the machine has none.
func machineEngine(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/var/run/docker.sock"); err != nil {
		return ""
	}
	var b strings.Builder
	for _, args := range [][]string{{"network", "ls", "-q", "--no-trunc"}, {"images", "-qa", "--no-trunc"}} {
		out, err := exec.Command("docker", append([]string{"-H", "unix:///var/run/docker.sock"}, args...)...).Output()
		if err != nil {
			return ""
		}
		f := strings.Fields(string(out))
		sort.Strings(f)
		b.WriteString(strings.Join(f, " ") + "\n")
	}
	return b.String()
}

// TestEngine starts a private engine, creates a bridge network in it, loads
// an image built from bytes, stops, restarts (the network and the image
// stay), kills and pauses it, and checks that the teardown leaves the
// machine as it was: no directory, mount or process, and the machine's
// own engine unchanged.
func TestEngine(t *testing.T) {
	// Other tests may change the machine's engine meanwhile: what counts
	// is that nothing made in the private engine shows there.
	var made []string
	var dir string
	var pids []int
	t.Run("lifecycle", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		e := testengine.Start(t, testengine.Options{DataRootSize: 256 << 20})
		dir = filepath.Dir(e.SocketDir)
		t.Logf("dockerd answering in %s, %d MiB resident (dockerd and containerd)", e.StartTime.Round(time.Millisecond), e.RSS()>>20)
		c, err := docker.New("unix://" + e.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// The installer's preflight asks the engine for memory and CPU
		// limits: read-only hierarchies still show the controllers.
		if hi, err := c.Info(ctx); err != nil || !hi.MemoryLimit || !hi.CPUCfsQuota || hi.Rootless {
			t.Fatalf("info: %+v, %v", hi, err)
		}
		if _, err := c.NetworkCreate(ctx, "oac-testengine", map[string]string{"io.oac.test": "1"}); err != nil {
			t.Fatal(err)
		}
		n, err := c.NetworkInspect(ctx, "oac-testengine")
		if err != nil || n.Driver != "bridge" {
			t.Fatalf("network: %+v, %v", n, err)
		}
		made = append(made, n.ID)
		var archive bytes.Buffer
		id, err := imagetest.BuildArchive(&archive, imagetest.Options{Label: "oac-testengine"})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ImageLoadReader(ctx, &archive, "fixture"); err != nil {
			t.Fatal(err)
		}
		if got, _, _, err := c.ImageInspect(ctx, id.ConfigDigest); err != nil || got != id.ConfigDigest {
			t.Fatalf("image %s after the load: %q, %v", id.ConfigDigest, got, err)
		}
		made = append(made, id.ConfigDigest)

		e.Stop()
		if testengine.Ping(ctx, e.Socket) == nil {
			t.Fatal("a stopped engine answers")
		}
		e.Restart()
		t.Logf("restarted in %s", e.StartTime.Round(time.Millisecond))
		if _, err := c.NetworkInspect(ctx, "oac-testengine"); err != nil {
			t.Errorf("the network after a restart: %v", err)
		}
		if _, _, _, err := c.ImageInspect(ctx, id.ConfigDigest); err != nil {
			t.Errorf("the image after a restart: %v", err)
		}

		e.Pause()
		short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
		err = testengine.Ping(short, e.Socket)
		cancelShort()
		if err == nil {
			t.Error("a paused engine answers")
		}
		e.Continue()
		if err := testengine.Ping(ctx, e.Socket); err != nil {
			t.Errorf("a continued engine: %v", err)
		}

		e.Kill()
		if testengine.Ping(ctx, e.Socket) == nil {
			t.Fatal("a killed engine answers")
		}
		e.Restart()
		if _, err := c.NetworkInspect(ctx, "oac-testengine"); err != nil {
			t.Errorf("the network after a kill and a restart: %v", err)
		}
		pids = []int{e.PID()}
	})
	if dir == "" {
		return
	}
	// The subtest's cleanup has run: the engine is gone.
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s remains after the teardown (%v)", dir, err)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), dir) {
		t.Errorf("a mount below %s remains", dir)
	}
	for _, p := range pids {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(p))); err == nil {
			t.Errorf("dockerd (pid %d) still runs", p)
		}
	}
	machine := machineEngine(t)
	for _, m := range made {
		if m != "" && strings.Contains(machine, m) {
			t.Errorf("the machine's engine holds %s, made in the private engine:\n%s", m, machine)
		}
	}
}
