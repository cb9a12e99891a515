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
