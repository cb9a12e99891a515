package docker_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/moby/moby/client"

	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/image/imagetest"
)

// envLoadChild makes the test binary a process that loads an archive into
// the machine's engine as the runtime step does, and stops halfway (see
// TestMain).
const envLoadChild = "OAC_DOCKER_TEST_LOAD_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(envLoadChild); spec != "" {
		if err := loadChild(spec); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// loadChild streams the fixture's archive to the engine through
// image.LoadReader and, once 8 MiB have gone, says so on standard output
// and waits there, mid-load, to be killed.
func loadChild(spec string) error {
	var fx imagetest.Fixture
	if err := json.Unmarshal([]byte(spec), &fx); err != nil {
		return err
	}
	c, err := docker.New(docker.DefaultHost)
	if err != nil {
		return err
	}
	f, err := os.Open(fx.GzPath)
	if err != nil {
		return err
	}
	a := image.Archive{Size: fx.GzSize, SHA256: fx.GzSHA256, UnpackedSize: fx.TarSize, UnpackedSHA256: fx.TarSHA256, Want: fx.Identity}
	lr := image.LoadReader(f, a)
	return c.ImageLoadReader(context.Background(), &stallAfter{r: lr, n: 8 << 20}, fx.GzPath)
}

// stallAfter reads r until n bytes have passed, then reports it on standard
// output and blocks.
type stallAfter struct {
	r    io.Reader
	n    int64
	seen int64
}

func (s *stallAfter) Read(b []byte) (int, error) {
	if s.seen >= s.n {
		fmt.Println("mid-load")
		select {}
	}
	n, err := s.r.Read(b[:min(int64(len(b)), s.n-s.seen)])
	s.seen += int64(n)
	return n, err
}

// TestEngineLoadKilledMidway: the process loading the Runtime image is
// killed (SIGKILL: a dropped session, an OOM kill) while the engine reads
// the stream; the engine keeps no image and no import of it, and the next
// load of the same archive completes.
func TestEngineLoadKilledMidway(t *testing.T) {
	c, raw := engine(t)
	fx, err := imagetest.WriteFixture(t.TempDir(), imagetest.Options{Label: "oac-test-" + uuid.NewString(), PayloadSize: 32 << 20, PayloadLayers: 2})
	if err != nil {
		t.Fatal(err)
	}
	removeImages(t, raw, fx.ConfigDigest, fx.ManifestDigest)
	spec, err := json.Marshal(fx)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envLoadChild+"="+string(spec))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	said := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		said <- l
	}()
	select {
	case l := <-said:
		if l != "mid-load\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the loading process said %q", l)
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the loading process never reached the middle of the load")
	}
	// The engine's imports in progress, ours among them (those of other
	// tests' loads end on their own).
	root := "/var/lib/docker"
	if info, err := raw.Info(ctx(t), client.InfoOptions{}); err == nil && info.Info.DockerRootDir != "" {
		root = info.Info.DockerRootDir
	}
	importing, _ := filepath.Glob(filepath.Join(root, "tmp", "docker-import-*"))
	t.Logf("killed while the engine imports into %v", importing)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	// The engine notices the dropped connection, fails the load and
	// removes what it had unpacked.
	deadline := time.Now().Add(time.Minute)
	for {
		_, found, err := image.Resolve(ctx(t), c, fx.Identity)
		if err != nil {
			t.Fatal(err)
		}
		var imports []string
		for _, d := range importing {
			if _, err := os.Lstat(d); err == nil {
				imports = append(imports, d)
			}
		}
		if !found && len(imports) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after the kill the engine holds the image (%v) or an import of it (%v)", found, imports)
		}
		time.Sleep(50 * time.Millisecond)
	}

	f, err := os.Open(fx.GzPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lr := image.LoadReader(f, image.Archive{Size: fx.GzSize, SHA256: fx.GzSHA256, UnpackedSize: fx.TarSize, UnpackedSHA256: fx.TarSHA256, Want: fx.Identity})
	defer lr.Close()
	if err := c.ImageLoadReader(ctx(t), lr, fx.GzPath); err != nil {
		t.Fatalf("the load after the kill: %v", err)
	}
	if _, found, err := image.Resolve(ctx(t), c, fx.Identity); err != nil || !found {
		t.Fatalf("after the second load: %v, %v", found, err)
	}
}
