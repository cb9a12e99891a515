package install

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// commandHost is a host tree with /usr/local/sbin and the bookkeeping.
func commandHost(t *testing.T) layout.Host {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the command on the host is root's: needs root")
	}
	h := layout.Host{Root: t.TempDir()}
	for _, dir := range []string{filepath.Dir(h.Command()), h.EtcDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func recordedCommand(t *testing.T, h layout.Host) (bookkeeping.Command, bool) {
	t.Helper()
	db, err := bookkeeping.Open(h.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, ok, err := db.GetCommand()
	if err != nil {
		t.Fatal(err)
	}
	return c, ok
}

// An install leaves the bytes that ran as the command on the host, root's,
// 0755, recorded; the same bytes again change nothing (not even the inode);
// other bytes replace it (the command last run wins); the last node's
// uninstall removes it.
func TestTheCommandOnTheHost(t *testing.T) {
	h := commandHost(t)
	var out bytes.Buffer
	KeepCommand(h, []byte("build 1"), "v1", &out)
	st, err := os.Stat(h.Command())
	if err != nil {
		t.Fatalf("no command on the host: %v (%s)", err, out.String())
	}
	if st.Mode().Perm() != 0o755 || !strings.Contains(out.String(), h.Command()) {
		t.Errorf("mode %v, output %q", st.Mode(), out.String())
	}
	if c, ok := recordedCommand(t, h); !ok || c.Path != h.Command() || c.Version != "v1" {
		t.Errorf("recorded %+v %v", c, ok)
	}

	out.Reset()
	KeepCommand(h, []byte("build 1"), "v1", &out)
	again, _ := os.Stat(h.Command())
	if !os.SameFile(st, again) || out.Len() != 0 {
		t.Errorf("the same bytes replaced the command (output %q)", out.String())
	}

	KeepCommand(h, []byte("build 2"), "v2", &out)
	if b, _ := os.ReadFile(h.Command()); string(b) != "build 2" {
		t.Errorf("the command holds %q, want the last run's bytes", b)
	}

	db, err := bookkeeping.Open(h.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := RemoveCommand(db, &out); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := os.Lstat(h.Command()); !os.IsNotExist(err) {
		t.Errorf("the command is still there: %v", err)
	}
	if want := "Removed the command " + h.Command() + ": no node remains on this host."; !strings.Contains(out.String(), want) {
		t.Errorf("the removal says %q, want %q", out.String(), want)
	}
	if _, ok := recordedCommand(t, h); ok {
		t.Error("the command is still recorded")
	}
}

// A file the installer did not write is never replaced or removed, nor is
// a copy changed since it was written, nor is anything written into a
// directory others may change.
func TestTheCommandOnTheHostKeepsWhatIsNotItsOwn(t *testing.T) {
	h := commandHost(t)
	os.WriteFile(h.Command(), []byte("the operator's"), 0o755)
	var out bytes.Buffer
	KeepCommand(h, []byte("build 1"), "v1", &out)
	if b, _ := os.ReadFile(h.Command()); string(b) != "the operator's" || !strings.Contains(out.String(), "Warning") {
		t.Errorf("an unrecorded file: now %q, output %q", b, out.String())
	}

	h = commandHost(t)
	KeepCommand(h, []byte("build 1"), "v1", &out)
	os.WriteFile(h.Command(), []byte("changed since"), 0o755)
	db, err := bookkeeping.Open(h.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := RemoveCommand(db, &out); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if b, _ := os.ReadFile(h.Command()); string(b) != "changed since" || !strings.Contains(out.String(), "Kept") {
		t.Errorf("a changed copy: now %q, output %q", b, out.String())
	}

	h = commandHost(t)
	os.Chmod(filepath.Dir(h.Command()), 0o777)
	out.Reset()
	KeepCommand(h, []byte("build 1"), "v1", &out)
	if _, err := os.Lstat(h.Command()); !os.IsNotExist(err) || !strings.Contains(out.String(), "unsafe mode") {
		t.Errorf("a world-writable directory: %v, output %q", err, out.String())
	}
}

// A run that finds the command as it left it does not write installer.db:
// a converged rerun leaves root's records byte for byte.
func TestTheCommandOnTheHostConvergedWritesNothing(t *testing.T) {
	h := commandHost(t)
	KeepCommand(h, []byte("build 1"), "v1", io.Discard)
	before, err := os.Stat(h.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := os.ReadFile(h.Bookkeeping())
	time.Sleep(10 * time.Millisecond)
	KeepCommand(h, []byte("build 1"), "v1", io.Discard)
	after, _ := os.Stat(h.Bookkeeping())
	b2, _ := os.ReadFile(h.Bookkeeping())
	if !after.ModTime().Equal(before.ModTime()) || !bytes.Equal(b1, b2) {
		t.Errorf("installer.db written by a converged run (mtime %v → %v)", before.ModTime(), after.ModTime())
	}
}

// A copy write cut off before its rename leaves the temporary file
// .oac-node-install.tmp (the size of the command) beside the command: the
// last node's uninstall removes it whatever it finds at the command's
// path — the recorded copy, an older one (the record names the bytes the
// cut-off write was to leave), a changed one or none.
func TestRemoveCommandRemovesAnInterruptedCopy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		there func(h layout.Host)
	}{
		{"the recorded copy", func(layout.Host) {}},
		{"an older copy", func(h layout.Host) { os.WriteFile(h.Command(), []byte("build 0"), 0o755) }},
		{"no copy", func(h layout.Host) { os.Remove(h.Command()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := commandHost(t)
			var out bytes.Buffer
			KeepCommand(h, []byte("build 1"), "v1", &out)
			tc.there(h)
			tmp := filepath.Join(filepath.Dir(h.Command()), ".oac-node-install.tmp")
			if err := os.WriteFile(tmp, []byte("build 1, cut off"), 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := bookkeeping.Open(h.Bookkeeping())
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := RemoveCommand(db, &out); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(tmp); !os.IsNotExist(err) {
				t.Errorf("the interrupted copy %s stays: %v (%s)", tmp, err, out.String())
			}
		})
	}
}
