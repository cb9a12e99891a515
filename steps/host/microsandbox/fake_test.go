package microsandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// fakeMSB is a fake msb executable: a shell script that logs its argv and
// environment to log, and for the subcommand "<a>-<b>" (for example
// image-inspect) prints dir/<a>-<b>.out, sleeps dir/<a>-<b>.sleep seconds
// if present, runs dir/<a>-<b>.then if present, and exits with the status
// in dir/<a>-<b>.rc (0 when absent).
type fakeMSB struct {
	t   *testing.T
	dir string
	cli *CLI
}

const fakeScript = `#!/bin/sh
D=%q
{ printf 'ARGS'; for a in "$@"; do printf ' <%%s>' "$a"; done; printf '\n'; env; printf -- '--END--\n'; } >> "$D/log"
S="$1-$2"
[ -f "$D/$S.sleep" ] && sleep "$(cat "$D/$S.sleep")"
[ -f "$D/$S.out" ] && cat "$D/$S.out"
[ -f "$D/$S.then" ] && . "$D/$S.then"
rc=0
[ -f "$D/$S.rc" ] && rc=$(cat "$D/$S.rc")
exit "$rc"
`

func newFake(t *testing.T) *fakeMSB {
	t.Helper()
	dir := t.TempDir()
	msb := filepath.Join(dir, "msb")
	if err := os.WriteFile(msb, []byte(fmt.Sprintf(fakeScript, dir)), 0o700); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "store")
	os.Mkdir(store, 0o700)
	return &fakeMSB{t: t, dir: dir, cli: &CLI{MSB: msb, Store: store, Firmware: filepath.Join(dir, "libkrunfw.so.5.6.1")}}
}

// answer sets what the subcommand prints and its exit status.
func (f *fakeMSB) answer(sub, out string, rc int) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, sub+".out"), []byte(out), 0o600); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, sub+".rc"), []byte(fmt.Sprint(rc)), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// then sets a shell snippet the subcommand runs after printing.
func (f *fakeMSB) then(sub, script string) {
	os.WriteFile(filepath.Join(f.dir, sub+".then"), []byte(script), 0o600)
}

func (f *fakeMSB) sleep(sub string, seconds int) {
	os.WriteFile(filepath.Join(f.dir, sub+".sleep"), []byte(fmt.Sprint(seconds)), 0o600)
}

// call is one logged invocation.
type call struct {
	args []string
	env  map[string]string
}

func (f *fakeMSB) calls() []call {
	data, _ := os.ReadFile(filepath.Join(f.dir, "log"))
	var out []call
	for _, block := range strings.Split(string(data), "--END--\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if len(lines) == 0 || !strings.HasPrefix(lines[0], "ARGS") {
			continue
		}
		c := call{env: map[string]string{}}
		for _, a := range strings.Split(strings.TrimPrefix(lines[0], "ARGS"), " <")[1:] {
			c.args = append(c.args, strings.TrimSuffix(strings.TrimSpace(a), ">"))
		}
		for _, l := range lines[1:] {
			if k, v, ok := strings.Cut(l, "="); ok {
				c.env[k] = v
			}
		}
		out = append(out, c)
	}
	return out
}

func (f *fakeMSB) argLines() []string {
	var out []string
	for _, c := range f.calls() {
		out = append(out, strings.Join(c.args, " "))
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
