//go:build crashtest

package generation

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// nodeAccount is the uid and gid the shipped command runs as: the generation
// helper refuses root.
const nodeAccount = 65534

// shippedCLI is the shipped command line, built with the failpoints
// (-tags crashtest), run as the node account against a fake Docker Engine
// on a unix socket. The engine is the host's, outside every sandbox: each
// sandbox starts it afresh with the images the template's node had.
type shippedCLI struct {
	bin  string
	host string // unix://<socket>

	mu     sync.Mutex
	engine *dockertest.Engine
	images []dockertest.Image // the template's engine state
}

func newShippedCLI(t *testing.T) *shippedCLI {
	t.Helper()
	// Unix socket paths are limited to 108 bytes: t.TempDir() can exceed it.
	dir, err := os.MkdirTemp("", "oac-crash-cli-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	c := &shippedCLI{bin: filepath.Join(dir, "oac-node-install")}
	build := exec.Command("go", "build", "-tags", "crashtest", "-o", c.bin, "github.com/openagentcore/oac-node-install/cmd/oac-node-install")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the command with the failpoints: %v\n%s", err, out)
	}
	sock := filepath.Join(dir, "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(sock, 0o666)
	c.host = "unix://" + sock
	c.reset()
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return c
}

func (c *shippedCLI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	e := c.engine
	c.mu.Unlock()
	e.ServeHTTP(w, r)
}

// reset starts a fresh engine holding the template's images.
func (c *shippedCLI) reset() {
	e := dockertest.New()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, img := range c.images {
		e.AddImage(img)
	}
	c.engine = e
}

// keep makes the engine's current images the template's.
func (c *shippedCLI) keep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.images = c.engine.Images()
}

// command is the helper's command line for one action on the node whose
// account home is home.
func (c *shippedCLI) command(home, action string, g int64, digest string) *exec.Cmd {
	cmd := exec.Command(c.bin, "--generation-action", action, "--generation", strconv.FormatInt(g, 10),
		"--specification-digest", digest, "--installation-id", testID)
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nodeAccount, Gid: nodeAccount}}
	return cmd
}

// cliNode is the template node of a crash test run through the shipped
// command.
type cliNode struct {
	cli  *shippedCLI
	home string
	root string
}

func (n *cliNode) run(action string, g int64, spec *release.Specification) error {
	out, err := n.cli.command(n.home, action, g, spec.Digest()).CombinedOutput()
	if err != nil {
		return &cliError{err: err, out: string(out)}
	}
	n.cli.keep()
	return nil
}

func (n *cliNode) path(rel ...string) string {
	return filepath.Join(append([]string{n.root}, rel...)...)
}

func (n *cliNode) forget(t testing.TB, id image.Identity) {
	n.cli.mu.Lock()
	defer n.cli.mu.Unlock()
	var keep []dockertest.Image
	for _, img := range n.cli.images {
		if img.ID != id.ConfigDigest {
			keep = append(keep, img)
		}
	}
	n.cli.images = keep
	n.cli.engine = dockertest.New()
	for _, img := range keep {
		n.cli.engine.AddImage(img)
	}
}

type cliError struct {
	err error
	out string
}

func (e *cliError) Error() string { return e.err.Error() + "\n" + e.out }

// reachable lets every account traverse the test's directories above p,
// below the temporary directory.
func reachable(p string) {
	for d := filepath.Dir(p); len(d) > len(os.TempDir()); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
}

// chownTree gives dir and everything below it to the node account.
func chownTree(t *testing.T, dir string) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nodeAccount, nodeAccount)
	})
	if err != nil {
		t.Fatal(err)
	}
}
