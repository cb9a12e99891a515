package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// The manual pages in docs/man are generated from the command tree with
// cobra's own generator (github.com/spf13/cobra/doc), so that they say
// what --help says; this test regenerates them and fails when the
// committed pages differ: `make man` writes them (this test with -update).
// The generator is used only here, so the shipped binary does not carry
// it.

var updateMan = flag.Bool("update", false, "rewrite docs/man from the command tree")

// manDir is docs/man from this package's directory.
const manDir = "../../docs/man"

// manDate is the date the pages carry: fixed, so that a page changes only
// when what it says changes.
var manDate = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// manPages renders every page of the command tree: name to content.
func manPages(t *testing.T) map[string]string {
	t.Helper()
	c := &cli{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	root := c.rootCommand()
	root.DisableAutoGenTag = true
	// The version is the build's; a page must not change with it.
	root.Version = ""
	header := &doc.GenManHeader{Title: "OAC-NODE-INSTALL", Section: "8", Date: &manDate,
		Source: "oac-node-install", Manual: "OAC sandbox node installer"}
	dir := t.TempDir()
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		cmd.DisableAutoGenTag = true
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if err := doc.GenManTree(root, header, dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		pages[e.Name()] = string(data)
	}
	return pages
}

func TestManPagesAreCurrent(t *testing.T) {
	pages := manPages(t)
	for _, want := range []string{"oac-node-install.8", "oac-node-install-status.8", "oac-node-install-leases.8",
		"oac-node-install-check.8", "oac-node-install-uninstall.8"} {
		if _, ok := pages[want]; !ok {
			t.Errorf("no page %s among %v", want, slices.Sorted(mapKeys(pages)))
		}
	}
	if *updateMan {
		if err := os.RemoveAll(manDir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(manDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range pages {
			if err := os.WriteFile(filepath.Join(manDir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	committed, err := filepath.Glob(filepath.Join(manDir, "*.8"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range committed {
		if _, ok := pages[filepath.Base(p)]; !ok {
			t.Errorf("%s is no command's page any more: run `make man` and commit the result", p)
		}
	}
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join(manDir, name))
		if err != nil {
			t.Errorf("%s: %v (run `make man`)", name, err)
			continue
		}
		if string(got) != want {
			t.Errorf("docs/man/%s is stale: run `make man` and commit the result", name)
		}
	}
}

// TestHelpCitesNoContract: what --help and the manual pages say is for
// operators, who have no CONTRACT document to look a section up in.
func TestHelpCitesNoContract(t *testing.T) {
	for name, page := range manPages(t) {
		if strings.Contains(page, "CONTRACT") || strings.Contains(page, "§") {
			t.Errorf("%s cites the contract", name)
		}
	}
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestDocsLinksResolve: every relative link of the operator's guide names
// a file or directory of the repository, and every anchor a heading of it.
func TestDocsLinksResolve(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages in docs/: %v", err)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range append(pages, "../../README.md") {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			p := page
			if file != "" {
				p = filepath.Join(filepath.Dir(page), file)
			}
			body, err := os.ReadFile(p)
			if errors.Is(err, syscall.EISDIR) {
				continue
			}
			if err != nil {
				t.Errorf("%s links to %s: %v", page, target, err)
				continue
			}
			if anchor != "" && !slices.Contains(headingAnchors(string(body)), anchor) {
				t.Errorf("%s links to %s: no such heading", page, target)
			}
		}
	}
}

// headingAnchors are the anchors GitHub gives a Markdown file's headings.
func headingAnchors(md string) []string {
	var out []string
	for _, l := range strings.Split(md, "\n") {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}
