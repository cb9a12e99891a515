package main

import (
	"bufio"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestRunPrintsReadyLineAndStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var stderr strings.Builder
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--data", t.TempDir(), "--listen", "127.0.0.1:0"}, pw, &stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v (stderr %q)", err, stderr.String())
	}
	if !regexp.MustCompile(`^oac-devcore: serving https://127\.0\.0\.1:\d+ \(CA /.+/ca\.pem\)\n$`).MatchString(line) {
		t.Fatalf("ready line %q", line)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d, stderr %q", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not stop")
	}
	if !strings.Contains(stderr.String(), "placeholder") {
		t.Fatalf("no placeholder warning: %q", stderr.String())
	}
}

func TestRunUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--data", "x", "extra"},
		{"--data", "x", "--node-program", "/bin/true", "--artifact-size-mib", "4"},
		{"--bogus"},
	} {
		var out, errw strings.Builder
		if code := run(context.Background(), args, &out, &errw); code != 2 {
			t.Errorf("run(%q) = %d, want 2", args, code)
		}
	}
}

// TestAdminCommands drives a running console through oac-devcore admin.
func TestAdminCommands(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	data := t.TempDir()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--data", data, "--listen", "127.0.0.1:0"}, pw, io.Discard)
		pw.Close()
	}()
	if _, err := bufio.NewReader(pr).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	admin := func(args ...string) (int, string, string) {
		var out, errw strings.Builder
		code := run(ctx, append([]string{"admin", "--data", data}, args...), &out, &errw)
		return code, out.String(), errw.String()
	}
	code, tok, errs := admin("token", "--max-active", "2")
	if code != 0 || !regexp.MustCompile(`^oac_et_[0-9a-f]{64}\n$`).MatchString(tok) {
		t.Fatalf("token: %d %q %q", code, tok, errs)
	}
	if code, out, errs := admin("nodes"); code != 0 || out != "{\"nodes\":[]}\n" {
		t.Fatalf("nodes: %d %q %q", code, out, errs)
	}
	if code, out, errs := admin("publish-generation"); code != 0 || !strings.Contains(out, `"generation":2`) {
		t.Fatalf("publish-generation: %d %q %q", code, out, errs)
	}
	if code, out, errs := admin("drop-generation", "1"); code != 0 || !strings.Contains(out, `"dropped":true`) {
		t.Fatalf("drop-generation: %d %q %q", code, out, errs)
	}
	for _, c := range []struct{ cmd, want string }{
		{"pause-artifacts", `{"paused":true,"held":0,"ranged":0}`},
		{"artifacts", `{"paused":true,"held":0,"ranged":0}`},
		{"resume-artifacts", `{"paused":false,"held":0,"ranged":0}`},
	} {
		if code, out, errs := admin(c.cmd); code != 0 || out != c.want+"\n" {
			t.Fatalf("%s: %d %q %q", c.cmd, code, out, errs)
		}
	}
	if code, _, errs := admin("remove-node", "0b6c3f4e-8a51-4d2e-9c1f-5a7b3d2e1f00"); code != 1 || !strings.Contains(errs, "HTTP 404") {
		t.Fatalf("remove-node of an unknown node: %d %q", code, errs)
	}
	for _, args := range [][]string{{}, {"nodes", "x"}, {"remove-node", "not-a-uuid"}, {"drop-generation", "x"}, {"pause-artifacts", "x"}, {"bogus"}} {
		if code, _, _ := admin(args...); code != 2 {
			t.Errorf("admin %q: exit %d, want 2", args, code)
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("console exit %d", code)
	}
}
