//go:build e2e

package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEndToEndBundle installs a node offline: oac-devcore writes a bundle
// (admin bundle) while Core's selected Runtime is not the console's
// current release, the console then serves no node files at all, and the
// installer run from the bundle with --bundle installs the node in the
// test host: every file comes from the bundle.
func TestEndToEndBundle(t *testing.T) {
	_, core, h := endToEnd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Core selects a Runtime release the console does not make current:
	// a second generation, the first one dropped.
	gen := core.admin(t, "publish-generation")
	core.admin(t, "drop-generation", "1")
	t.Logf("generation: %s", gen)

	// The bundle lives where the service account reaches it: root's
	// directories, none writable by others (the shared /tmp is sticky).
	dir, err := os.MkdirTemp("", "oac-e2e-bundle-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	bundle := filepath.Join(dir, "bundle")
	out := core.admin(t, "bundle", bundle)
	t.Logf("%s", out)
	if !strings.Contains(out, "releases/") {
		t.Fatalf("the bundle holds no other release: %s", out)
	}

	// From now on the console holds no node files.
	payload := filepath.Join(core.data, "node-payload")
	if err := os.Rename(payload, payload+".away"); err != nil {
		t.Fatal(err)
	}
	if code := consoleStatus(t, core, "/node-install/manifest.json"); code == http.StatusOK {
		t.Fatalf("the console still serves its manifest")
	}

	token := core.admin(t, "token")
	installer := filepath.Join(bundle, "oac-node-install")
	args := []string{installer, "--bundle", bundle, "--core-url", core.url, "--provider", "docker",
		"--installation-id", core.installationID, "--core-ca", core.ca}
	run := func(stdin string, args ...string) (int, string, string) {
		t.Helper()
		cmd := h.Command(ctx, append([]string{"env", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		code := 0
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatalf("exec: %v", err)
			}
			code = ee.ExitCode()
		}
		return code, stdout.String(), stderr.String()
	}
	start := time.Now()
	code, stdout, stderr := run(token+"\n", append(args, "--enrollment-token-stdin")...)
	t.Logf("install from the bundle (exit %d, %s):\n%s\n%s", code, time.Since(start).Round(time.Millisecond), stdout, stderr)
	if code != 0 {
		t.Fatalf("the installation from the bundle exited %d", code)
	}
	for _, want := range []string{"copy the node's files from the offline bundle " + bundle, "Node installation complete.",
		"Core connection: connected", "Sandbox Provider: Docker (ready)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	// The Runtime files are the selected release's, from the bundle.
	root := filepath.Join(h.VarLib(), "oac-node", ".oac", "nodes", core.installationID)
	ra, err := os.ReadFile(filepath.Join(root, "runtime-artifacts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sel string
	if entries, _ := os.ReadDir(filepath.Join(bundle, "releases")); len(entries) == 1 {
		sel = entries[0].Name()
	}
	if sel == "" || !strings.Contains(string(ra), `"source_commit": "`+sel+`"`) {
		t.Errorf("runtime-artifacts.json does not name the bundle's release %q:\n%s", sel, ra)
	}

	// A rerun of the registered node from the bundle changes nothing.
	code, stdout, stderr = run("", args...)
	t.Logf("rerun (exit %d):\n%s\n%s", code, stdout, stderr)
	if code != 0 {
		t.Errorf("the rerun from the bundle exited %d", code)
	}
}

// consoleStatus is the console's answer status for path.
func consoleStatus(t *testing.T, d *devcore, path string) int {
	t.Helper()
	out, err := exec.Command("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", d.ca, d.url+path).Output()
	if err != nil {
		t.Fatalf("curl %s: %v", path, err)
	}
	var code int
	for _, c := range strings.TrimSpace(string(out)) {
		code = code*10 + int(c-'0')
	}
	return code
}
