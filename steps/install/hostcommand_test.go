package install

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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
	KeepCommand(h, bytes.NewReader([]byte("build 1")), "v1", &out)
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
	KeepCommand(h, bytes.NewReader([]byte("build 1")), "v1", &out)
	again, _ := os.Stat(h.Command())
	if !os.SameFile(st, again) || out.Len() != 0 {
		t.Errorf("the same bytes replaced the command (output %q)", out.String())
	}

	KeepCommand(h, bytes.NewReader([]byte("build 2")), "v2", &out)
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
	KeepCommand(h, bytes.NewReader([]byte("build 1")), "v1", &out)
	if b, _ := os.ReadFile(h.Command()); string(b) != "the operator's" || !strings.Contains(out.String(), "Warning") {
		t.Errorf("an unrecorded file: now %q, output %q", b, out.String())
	}

	h = commandHost(t)
	KeepCommand(h, bytes.NewReader([]byte("build 1")), "v1", &out)
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
	KeepCommand(h, bytes.NewReader([]byte("build 1")), "v1", &out)
	if _, err := os.Lstat(h.Command()); !os.IsNotExist(err) || !strings.Contains(out.String(), "unsafe mode") {
		t.Errorf("a world-writable directory: %v, output %q", err, out.String())
	}
}

// A run that finds the command as it left it does not write installer.db:
// a converged rerun leaves root's records byte for byte.
func TestTheCommandOnTheHostConvergedWritesNothing(t *testing.T) {
	h := commandHost(t)
	KeepCommand(h, bytes.NewReader([]byte("build 1")), "v1", io.Discard)
	before, err := os.Stat(h.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := os.ReadFile(h.Bookkeeping())
	time.Sleep(10 * time.Millisecond)
	KeepCommand(h, bytes.NewReader([]byte("build 1")), "v1", io.Discard)
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
			KeepCommand(h, bytes.NewReader([]byte("build 1")), "v1", &out)
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

// The record holds the copy's stamp (inode, size, modification and change
// times) once written, so that a converged rerun compares bytes and hashes
// nothing; a record without it (an older installer's) gets it once,
// without a new copy; a copy changed in place to other bytes of the same
// size is replaced.
func TestTheCommandOnTheHostStamp(t *testing.T) {
	h := commandHost(t)
	if wrote := KeepCommand(h, bytes.NewReader([]byte("build 1")), "v1", io.Discard); !slices.Equal(wrote, []string{h.Bookkeeping(), h.Command()}) {
		t.Errorf("the first copy reports writes %q", wrote)
	}
	if wrote := KeepCommand(h, bytes.NewReader([]byte("build 1")), "v1", io.Discard); wrote != nil {
		t.Errorf("a converged run reports writes %q", wrote)
	}
	stampNow := func() bookkeeping.FileStamp {
		t.Helper()
		st, err := os.Stat(h.Command())
		if err != nil {
			t.Fatal(err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		return bookkeeping.FileStamp{Dev: uint64(sys.Dev), Ino: sys.Ino, Size: sys.Size,
			MtimeNs: time.Unix(sys.Mtim.Unix()).UnixNano(), CtimeNs: time.Unix(sys.Ctim.Unix()).UnixNano()}
	}
	c, _ := recordedCommand(t, h)
	if c.File == nil || *c.File != stampNow() {
		t.Fatalf("recorded stamp %+v, the file's %+v", c.File, stampNow())
	}

	// An older installer's record: no stamp.
	db, err := bookkeeping.Open(h.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	c.File = nil
	if err := db.SetCommand(c); err != nil {
		t.Fatal(err)
	}
	db.Close()
	ino := stampNow().Ino
	var out bytes.Buffer
	if wrote := KeepCommand(h, bytes.NewReader([]byte("build 1")), "v1", &out); !slices.Equal(wrote, []string{h.Bookkeeping()}) {
		t.Errorf("completing the record reports writes %q", wrote)
	}
	if c, _ := recordedCommand(t, h); c.File == nil || *c.File != stampNow() || stampNow().Ino != ino || out.Len() != 0 {
		t.Errorf("after a record without a stamp: recorded %+v, file %+v (inode %d before), output %q", c.File, stampNow(), ino, out.String())
	}

	// Other bytes of the same size, written in place.
	if err := os.WriteFile(h.Command(), []byte("build 2"), 0o755); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	KeepCommand(h, bytes.NewReader([]byte("build 1")), "v1", &out)
	if b, _ := os.ReadFile(h.Command()); string(b) != "build 1" || !strings.Contains(out.String(), "now") {
		t.Errorf("a copy changed in place is %q after the run, output %q", b, out.String())
	}
	if c, _ := recordedCommand(t, h); c.File == nil || *c.File != stampNow() {
		t.Errorf("after the replacement: recorded %+v, file %+v", c.File, stampNow())
	}
}
