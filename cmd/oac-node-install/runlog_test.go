package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/workflow"
)

// sent is a journal that keeps what it was sent.
type sent struct{ lines []string }

func (s *sent) send(line string, stderr bool) error {
	s.lines = append(s.lines, fmt.Sprintf("%v %s", stderr, line))
	return nil
}

// TestRunLogIsWhatTheTerminalShowed: colours, a progress line rewritten in
// place and controls are recorded as the terminal left them, lines printed
// before the run was known to be recorded included, in the journal and in
// the kept file alike.
func TestRunLogIsWhatTheTerminalShowed(t *testing.T) {
	r := newRunLog()
	var out, errOut bytes.Buffer
	stdout, stderr := r.writer(&out, 0), r.writer(&errOut, 1)
	fmt.Fprint(stderr, "Warning: early\n")
	j := &sent{}
	r.activate("install", "0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c", j.send)
	fmt.Fprint(stdout, "\n\x1b[36m==> Download...\x1b[0m\n")
	fmt.Fprint(stdout, "\r  a.tar: 10% of 1.0 MiB\r  a.tar: 60% of 1.0 MiB, 2.0 MiB/s\r  a.tar: 100% of 1.0 MiB   \n")
	fmt.Fprint(stdout, "bell\a and \x1b]0;title\a done")
	if got := out.String(); !strings.Contains(got, "\x1b[36m") {
		t.Fatalf("the terminal lost its colour: %q", got)
	}
	dir := t.TempDir()
	p, err := r.keep(dir, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if !strings.HasPrefix(lines[0], "# oac-node-install install, ") || !strings.HasSuffix(lines[0], "exit 0") {
		t.Errorf("header %q", lines[0])
	}
	want := []string{"Warning: early", "", "==> Download...", "  a.tar: 100% of 1.0 MiB"}
	if !slices.Equal(lines[1:5], want) {
		t.Errorf("kept %q, want %q first", lines[1:], want)
	}
	last := lines[len(lines)-1]
	if strings.ContainsAny(last, "\x1b\a\r") || !strings.HasSuffix(last, "done") {
		t.Errorf("last line %q still holds controls", last)
	}
	// The journal has no blank lines.
	wantSent := []string{"true Warning: early", "false ==> Download...", "false   a.tar: 100% of 1.0 MiB"}
	if !slices.Equal(j.lines[:3], wantSent) {
		t.Errorf("journal got %q, want %q first", j.lines, wantSent)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("kept file %v %v, want mode 0600", st.Mode(), err)
	}
	if !strings.Contains(filepath.Base(p), "-install-0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c.log") {
		t.Errorf("file name %s names neither the action nor the installation", p)
	}
}

// TestRunLogNeverHoldsTheToken: once a run read its enrollment token, the
// token is replaced in every recorded line, whichever stream, split across
// writes, inside controls, so neither the journal nor the file holds it.
func TestRunLogNeverHoldsTheToken(t *testing.T) {
	const token = "oac-enroll-Zm9vYmFyYmF6cXV4LXNlY3JldA"
	r := newRunLog()
	j := &sent{}
	r.activate("install", "", j.send)
	r.secret(token)
	var sink bytes.Buffer
	stdout, stderr := r.writer(&sink, 0), r.writer(&sink, 1)
	fmt.Fprintf(stdout, "token %s here\n", token)
	fmt.Fprint(stderr, "Installation failed: Core said "+token[:10])
	fmt.Fprint(stderr, token[10:]+" is bad\n")
	fmt.Fprintf(stdout, "\x1b[31m%s\x1b[0m\n", token)
	fmt.Fprintf(stdout, "unfinished %s", token)
	p, err := r.keep(t.TempDir(), errors.New("boom"), 1)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	all := string(data) + strings.Join(j.lines, "\n")
	if strings.Contains(all, token) || strings.Contains(all, token[:20]) {
		t.Fatalf("the token was recorded:\n%s", all)
	}
	if n := strings.Count(string(data), redacted); n != 4 {
		t.Errorf("%d lines redacted, want 4:\n%s", n, data)
	}
}

// TestRunLogKeepsTheLastRuns: each kept run is a file of its own; the
// newest keptRuns stay, the older ones (and nothing else in the directory)
// are removed; a refusal that changed nothing keeps no file, nor does a
// run that was never recorded (status, help).
func TestRunLogKeepsTheLastRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs")
	start := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	var kept []string
	for i := range keptRuns + 3 {
		r := newRunLog()
		r.start = start.Add(time.Duration(i) * time.Minute)
		r.activate("install", "", nil)
		fmt.Fprintf(r.writer(&bytes.Buffer{}, 0), "run %d\n", i)
		p, err := r.keep(dir, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, filepath.Base(p))
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := newRunLog()
	r.activate("uninstall", "", nil)
	if p, err := r.keep(dir, workflow.Refusef("no"), 1); p != "" || err != nil {
		t.Errorf("a refusal that changed nothing kept %q (%v)", p, err)
	}
	r = newRunLog()
	fmt.Fprint(r.writer(&bytes.Buffer{}, 0), "status output\n")
	if p, err := r.keep(dir, nil, 0); p != "" || err != nil {
		t.Errorf("a run not recorded kept %q (%v)", p, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := append(slices.Clone(kept[3:]), "notes.txt")
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("directory holds %q, want %q", names, want)
	}
	// One more run: the oldest kept one goes.
	r = newRunLog()
	r.start = start.Add(time.Hour)
	r.activate("install", "", nil)
	if _, err := r.keep(dir, nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, kept[3])); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the oldest run %s was kept: %v", kept[3], err)
	}
}

// TestRunLogBoundsARun: a run's kept output stops at maxRunLog bytes,
// saying so; a progress line rewritten in place without end does not grow
// the record.
func TestRunLogBoundsARun(t *testing.T) {
	r := newRunLog()
	r.activate("install", "", nil)
	w := r.writer(&bytes.Buffer{}, 0)
	for i := range 200000 {
		fmt.Fprintf(w, "\r  file: %d%%", i%100)
	}
	fmt.Fprint(w, "\n")
	line := strings.Repeat("x", 1000) + "\n"
	for range maxRunLog/len(line) + 10 {
		fmt.Fprint(w, line)
	}
	p, err := r.keep(t.TempDir(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	if st.Size() > maxRunLog+1024 {
		t.Errorf("kept %d bytes, bound %d", st.Size(), maxRunLog)
	}
	data, _ := os.ReadFile(p)
	if !strings.Contains(string(data), "  file: 99%\n") || !strings.Contains(string(data), "(output cut after") {
		t.Errorf("the record lost its progress line or its cut note")
	}
}
