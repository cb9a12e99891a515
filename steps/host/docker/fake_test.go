package docker_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/image/imagetest"
)

func newClient(t *testing.T, host string) *docker.Client {
	t.Helper()
	c, err := docker.New(host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestNewRefusesOtherHosts(t *testing.T) {
	for _, h := range []string{"tcp://127.0.0.1:2375", "unix://relative.sock", "/var/run/docker.sock", "ssh://host"} {
		if _, err := docker.New(h); err == nil {
			t.Errorf("%s accepted", h)
		}
	}
}

func TestFakeVersionNegotiation(t *testing.T) {
	for _, v := range []string{"1.41", "1.45"} {
		t.Run(v, func(t *testing.T) {
			e := dockertest.Start(t)
			e.APIVersion = v
			c := newClient(t, e.Host)
			if _, err := c.Info(ctx(t)); err != nil {
				t.Fatal(err)
			}
			if c.APIVersion() != v {
				t.Fatalf("negotiated %s, want %s", c.APIVersion(), v)
			}
			reqs := e.Requests()
			if last := reqs[len(reqs)-1]; last != "GET /v"+v+"/info" {
				t.Fatalf("requests %v", reqs)
			}
		})
	}
}

func TestFakeInfo(t *testing.T) {
	e := dockertest.Start(t)
	e.SetInfo(dockertest.Info{NCPU: 2, MemTotal: 4 << 30, MemoryLimit: true, CPUCfsQuota: false,
		CgroupVersion: "2", SecurityOptions: []string{"name=seccomp,profile=builtin", "name=rootless"}, ServerVersion: "28.0.0"})
	got, err := newClient(t, e.Host).Info(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := docker.HostInfo{NCPU: 2, MemTotal: 4 << 30, MemoryLimit: true, CPUCfsQuota: false, CgroupVersion: "2", Rootless: true, ServerVersion: "28.0.0"}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestFakeUnavailable(t *testing.T) {
	e := dockertest.Start(t)
	c := newClient(t, e.Host)
	e.Stop()
	cases := map[string]func() error{
		"info":    func() error { _, err := c.Info(ctx(t)); return err },
		"inspect": func() error { _, _, _, err := c.ImageInspect(ctx(t), "sha256:"+strings.Repeat("a", 64)); return err },
		"network": func() error { _, err := c.NetworkInspect(ctx(t), "oac-node-x"); return err },
		"stale socket, nobody listening": func() error {
			sock := t.TempDir() + "/d.sock"
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			ln.(*net.UnixListener).SetUnlinkOnClose(false)
			ln.Close()
			_, err = newClient(t, "unix://"+sock).Info(ctx(t))
			return err
		},
		"missing socket": func() error {
			_, err := newClient(t, "unix:///nonexistent/docker.sock").Info(ctx(t))
			return err
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			err := f()
			if !errors.Is(err, docker.ErrUnavailable) || errors.Is(err, docker.ErrNotFound) {
				t.Fatalf("got %v, want ErrUnavailable", err)
			}
			t.Log(err)
		})
	}
}

func TestFakeCancelled(t *testing.T) {
	e := dockertest.Start(t)
	c := newClient(t, e.Host)
	cx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Info(cx)
	if !errors.Is(err, context.Canceled) || errors.Is(err, docker.ErrUnavailable) {
		t.Fatalf("got %v", err)
	}
}

func TestFakeImageLoadAndResolve(t *testing.T) {
	for _, tc := range []struct{ containerd, attestation bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		containerd := tc.containerd
		name := map[bool]string{false: "classic store", true: "containerd store"}[containerd]
		if tc.attestation {
			name += ", index with an attestation"
		}
		t.Run(name, func(t *testing.T) {
			e := dockertest.Start(t)
			e.ContainerdStore = containerd
			c := newClient(t, e.Host)
			fx, err := imagetest.WriteFixture(t.TempDir(), imagetest.Options{Label: "fake " + name, Attestation: tc.attestation})
			if err != nil {
				t.Fatal(err)
			}
			if _, found, err := image.Resolve(ctx(t), c, fx.Identity); err != nil || found {
				t.Fatalf("before load: found %v, %v", found, err)
			}
			_, _, _, err = c.ImageInspect(ctx(t), fx.ConfigDigest)
			if !errors.Is(err, docker.ErrNotFound) || !image.IsNotFound(err) {
				t.Fatalf("inspect of an absent image: %v", err)
			}
			if err := c.ImageLoad(ctx(t), fx.TarPath); err != nil {
				t.Fatal(err)
			}
			id, found, err := image.Resolve(ctx(t), c, fx.Identity)
			want := fx.ConfigDigest
			if containerd {
				want = fx.ManifestDigest
			}
			if err != nil || !found || id != want {
				t.Fatalf("after load: %q, %v, %v; want %q", id, found, err, want)
			}
		})
	}
}

func TestFakeImageLoadFailures(t *testing.T) {
	e := dockertest.Start(t)
	c := newClient(t, e.Host)
	dir := t.TempDir()
	var b bytes.Buffer
	b.WriteString("not an image archive")
	bad := dir + "/bad.tar"
	writeFile(t, bad, b.Bytes())

	err := c.ImageLoad(ctx(t), bad)
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("a load the engine refuses in its stream: %v", err)
	}
	t.Log(err)
	if len(e.Images()) != 0 {
		t.Fatal("the engine holds an image")
	}

	fx, err := imagetest.WriteFixture(dir, imagetest.Options{Label: "fail"})
	if err != nil {
		t.Fatal(err)
	}
	e.Fail("POST /images/load", 500)
	err = c.ImageLoad(ctx(t), fx.TarPath)
	if err == nil || errors.Is(err, docker.ErrNotFound) || errors.Is(err, docker.ErrUnavailable) {
		t.Fatalf("a 500: %v", err)
	}
	if err := c.ImageLoad(ctx(t), dir+"/missing.tar"); err == nil {
		t.Fatal("loaded a missing file")
	}
}

func TestFakeNetwork(t *testing.T) {
	for _, dup := range []bool{false, true} {
		t.Run(map[bool]string{false: "engine refuses duplicates", true: "engine accepts duplicates with a warning"}[dup], func(t *testing.T) {
			e := dockertest.Start(t)
			e.DuplicateNetworks = dup
			c := newClient(t, e.Host)
			name := docker.NetworkName("3f0e9f4e-1c1a-4f7e-9a53-0d3b8f3c2a10")
			if name != "oac-node-3f0e9f4e-1c1a-4f7e-9a53-0d3b8f3c2a10" {
				t.Fatalf("NetworkName = %s", name)
			}
			if _, err := c.NetworkInspect(ctx(t), name); !errors.Is(err, docker.ErrNotFound) {
				t.Fatalf("inspect before create: %v", err)
			}
			labels := map[string]string{docker.InstallationLabel: "3f0e9f4e-1c1a-4f7e-9a53-0d3b8f3c2a10"}
			id, err := c.NetworkCreate(ctx(t), name, labels)
			if err != nil {
				t.Fatal(err)
			}
			n, err := c.NetworkInspect(ctx(t), name)
			if err != nil || n.ID != id || n.Name != name || n.Driver != "bridge" || n.Labels[docker.InstallationLabel] == "" {
				t.Fatalf("inspect: %+v, %v", n, err)
			}
			if _, err := c.NetworkCreate(ctx(t), name, labels); !errors.Is(err, docker.ErrExists) {
				t.Fatalf("second create: %v", err)
			}
			if got := e.Networks(); len(got) != 1 || got[0].ID != id {
				t.Fatalf("networks after a second create: %+v", got)
			}
			// An ID prefix is not the network's name.
			if _, err := c.NetworkInspect(ctx(t), id[:12]); !errors.Is(err, docker.ErrNotFound) {
				t.Fatalf("inspect by ID prefix: %v", err)
			}
			if err := c.NetworkRemove(ctx(t), name); err != nil {
				t.Fatal(err)
			}
			if err := c.NetworkRemove(ctx(t), name); !errors.Is(err, docker.ErrNotFound) {
				t.Fatalf("second remove: %v", err)
			}
		})
	}
}

func TestFakeContainersByLabel(t *testing.T) {
	e := dockertest.Start(t)
	c := newClient(t, e.Host)
	e.AddContainer(dockertest.Container{ID: "a", State: "running", Labels: map[string]string{docker.InstallationLabel: "one"}})
	e.AddContainer(dockertest.Container{ID: "b", State: "exited", Labels: map[string]string{docker.InstallationLabel: "one"}})
	e.AddContainer(dockertest.Container{ID: "c", State: "running", Labels: map[string]string{docker.InstallationLabel: "two"}})
	e.AddContainer(dockertest.Container{ID: "d", State: "running"})
	got, err := c.ContainersByLabel(ctx(t), docker.InstallationLabel, "one")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "a" || got[1].ID != "b" || got[1].State != "exited" {
		t.Fatalf("got %+v", got)
	}
	got, err = c.ContainersByLabel(ctx(t), docker.InstallationLabel, "none")
	if err != nil || len(got) != 0 {
		t.Fatalf("got %+v, %v", got, err)
	}
}

// TestFakeImageLoadReader: the engine takes the gzip-compressed archive as
// docker load does; a stream that is not the bytes proven fails the load.
func TestFakeImageLoadReader(t *testing.T) {
	e := dockertest.Start(t)
	c := newClient(t, e.Host)
	fx, err := imagetest.WriteFixture(t.TempDir(), imagetest.Options{Label: "fake gzip"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(fx.GzPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a := image.Archive{Size: fx.GzSize, SHA256: strings.Repeat("0", 64), UnpackedSize: fx.TarSize, UnpackedSHA256: fx.TarSHA256, Want: fx.Identity}
	lr := image.LoadReader(f, a)
	err = c.ImageLoadReader(ctx(t), lr, fx.GzPath)
	lr.Close()
	if !errors.Is(err, image.ErrArchiveMismatch) {
		t.Fatalf("a stream with other bytes than proven: %v", err)
	}
	f.Seek(0, 0)
	a.SHA256 = fx.GzSHA256
	lr = image.LoadReader(f, a)
	defer lr.Close()
	if err := c.ImageLoadReader(ctx(t), lr, fx.GzPath); err != nil {
		t.Fatal(err)
	}
	if id, found, err := image.Resolve(ctx(t), c, fx.Identity); err != nil || !found || id != fx.ConfigDigest {
		t.Fatalf("after load: %q, %v, %v", id, found, err)
	}
}
