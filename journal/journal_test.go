package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile/safefiletest"
)

// testRecords returns n records of different sizes.
func testRecords(n int) [][]byte {
	recs := make([][]byte, n)
	for i := range recs {
		recs[i] = []byte(fmt.Sprintf(`{"step":"step-%d","facts":%q}`, i, strings.Repeat("x", 7*i)))
	}
	return recs
}

// writeJournal creates a journal at path holding recs and returns the
// offset at which each frame starts, plus the end.
func writeJournal(t *testing.T, path string, recs [][]byte) []int64 {
	t.Helper()
	j, err := Create(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	offs := []int64{0}
	for _, r := range recs {
		if err := j.Append(r); err != nil {
			t.Fatal(err)
		}
		offs = append(offs, offs[len(offs)-1]+int64(frameHeaderSize+len(r)))
	}
	return offs
}

func assertRecords(t *testing.T, got, want [][]byte) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("records:\n got %q\nwant %q", got, want)
	}
}

func TestJournalRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "install.journal")
	recs := testRecords(10)
	writeJournal(t, path, recs)
	j, got, tail, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if tail != nil {
		t.Fatalf("tail %v", tail)
	}
	assertRecords(t, got, recs)
	more := []byte("end")
	must(t, j.Append(more))
	must(t, j.Close())
	must(t, j.Close())
	got, tail, err = Scan(path)
	if err != nil || tail != nil {
		t.Fatalf("scan: %v %v", tail, err)
	}
	assertRecords(t, got, append(recs, more))
}

func TestJournalCreate(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	path := filepath.Join(t.TempDir(), "j")
	j, err := Create(path, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if _, err := Create(path, 0o600); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second create: got %v", err)
	}
	got, tail, err := Scan(path)
	if err != nil || tail != nil || len(got) != 0 {
		t.Fatalf("empty journal: %q %v %v", got, tail, err)
	}
}

func TestJournalAppendRange(t *testing.T) {
	j, err := Create(filepath.Join(t.TempDir(), "j"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, n := range []int{0, MaxRecordSize + 1} {
		if err := j.Append(make([]byte, n)); err == nil {
			t.Errorf("record of %d bytes appended", n)
		}
	}
	if err := j.Append(make([]byte, MaxRecordSize)); err != nil {
		t.Fatal(err)
	}
}

func TestJournalOpenRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	writeJournal(t, filepath.Join(dir, "real"), testRecords(2))
	must(t, os.Symlink("real", filepath.Join(dir, "link")))
	must(t, unix.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	for _, name := range []string{"link", "fifo", "missing"} {
		t.Run(name, func(t *testing.T) {
			if _, _, _, err := Open(filepath.Join(dir, name)); err == nil {
				t.Fatal("opened")
			}
			if _, _, err := Scan(filepath.Join(dir, name)); err == nil {
				t.Fatal("scanned")
			}
		})
	}
}

// Truncating the file at every byte inside the last record is a torn tail:
// the earlier records are returned and the file left as it is; Repair cuts
// the tail off with the original kept as <name>.broken, and appending
// afterwards works.
func TestJournalTornTailAtEveryOffset(t *testing.T) {
	dir := t.TempDir()
	recs := testRecords(5)
	full := filepath.Join(dir, "full")
	offs := writeJournal(t, full, recs)
	orig, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	last := offs[len(offs)-2]
	for cut := last; cut < int64(len(orig)); cut++ {
		path := filepath.Join(dir, "j")
		os.Remove(path + BrokenSuffix)
		must(t, os.WriteFile(path, orig[:cut], 0o600))

		// Scan reports the tail and changes nothing.
		got, tail, err := Scan(path)
		if err != nil {
			t.Fatalf("cut %d: scan: %v", cut, err)
		}
		assertRecords(t, got, recs[:len(recs)-1])
		torn := cut > last
		if (tail != nil) != torn {
			t.Fatalf("cut %d: tail %v", cut, tail)
		}
		if torn && (tail.Offset != last || tail.Dropped != cut-last || tail.Copy != "") {
			t.Fatalf("cut %d: scan tail %+v", cut, tail)
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, orig[:cut]) {
			t.Fatalf("cut %d: scan changed the file", cut)
		}
		if _, err := os.Lstat(path + BrokenSuffix); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("cut %d: scan kept a copy", cut)
		}

		// Open reports the tail and changes nothing either; Append refuses
		// until Repair has cut it.
		j, got, tail, err := Open(path)
		if err != nil {
			t.Fatalf("cut %d: open: %v", cut, err)
		}
		assertRecords(t, got, recs[:len(recs)-1])
		if (tail != nil) != torn || (torn && (tail.Offset != last || tail.Dropped != cut-last || tail.Copy != "")) {
			t.Fatalf("cut %d: open tail %+v", cut, tail)
		}
		if b, _ := os.ReadFile(path); !bytes.Equal(b, orig[:cut]) {
			t.Fatalf("cut %d: open changed the file", cut)
		}
		if torn {
			if err := j.Append([]byte("buried")); !errors.Is(err, ErrTornTail) {
				t.Fatalf("cut %d: append before repair: %v", cut, err)
			}
		}
		cutTail, err := j.Repair()
		if err != nil {
			t.Fatalf("cut %d: repair: %v", cut, err)
		}
		if torn {
			if cutTail == nil || cutTail.Offset != last || cutTail.Dropped != cut-last || cutTail.Copy != path+BrokenSuffix {
				t.Fatalf("cut %d: repaired tail %+v", cut, cutTail)
			}
			if b, _ := os.ReadFile(cutTail.Copy); !bytes.Equal(b, orig[:cut]) {
				t.Fatalf("cut %d: copy differs from the original", cut)
			}
			if !strings.Contains(cutTail.String(), path+BrokenSuffix) {
				t.Fatalf("cut %d: tail message %q", cut, cutTail.String())
			}
			if lc, err := LastCut(path); err != nil || *lc != *cutTail {
				t.Fatalf("cut %d: last cut %+v %v, want %+v", cut, lc, err, cutTail)
			}
		} else if cutTail != nil {
			t.Fatalf("cut %d: repaired tail %+v", cut, cutTail)
		}
		if fi, _ := os.Stat(path); fi.Size() != last {
			t.Fatalf("cut %d: size after repair %d, want %d", cut, fi.Size(), last)
		}
		next := []byte("after repair")
		must(t, j.Append(next))
		must(t, j.Close())
		j, got, tail, err = Open(path)
		if err != nil || tail != nil {
			t.Fatalf("cut %d: reopen: %v %v", cut, tail, err)
		}
		j.Close()
		assertRecords(t, got, append(append([][]byte{}, recs[:len(recs)-1]...), next))
	}
}

// A byte flipped anywhere in a record followed by another is corruption:
// refused, naming the file and the record's offset, and nothing changed.
func TestJournalCorruptEarlierRecord(t *testing.T) {
	dir := t.TempDir()
	recs := testRecords(4)
	full := filepath.Join(dir, "full")
	offs := writeJournal(t, full, recs)
	orig, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "j")
	for rec := 0; rec < len(recs)-1; rec++ {
		for pos := offs[rec]; pos < offs[rec+1]; pos++ {
			bad := bytes.Clone(orig)
			bad[pos] ^= 0xff
			must(t, os.WriteFile(path, bad, 0o600))
			for name, open := range map[string]func() error{
				"open": func() error { _, _, _, err := Open(path); return err },
				"scan": func() error { _, _, err := Scan(path); return err },
			} {
				err := open()
				var ce *CorruptError
				if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("record %d byte %d: %s: got %v, want *CorruptError", rec, pos, name, err)
				}
				if ce.Path != path || ce.Offset != offs[rec] {
					t.Fatalf("record %d byte %d: %s: error names %s at %d", rec, pos, name, ce.Path, ce.Offset)
				}
				if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprint(offs[rec])) {
					t.Fatalf("message %q", err)
				}
			}
			if b, _ := os.ReadFile(path); !bytes.Equal(b, bad) {
				t.Fatalf("record %d byte %d: refused journal was changed", rec, pos)
			}
			if _, err := os.Lstat(path + BrokenSuffix); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("record %d byte %d: copy kept of a corrupt journal", rec, pos)
			}
		}
	}
}

// The final record: a flipped header byte is corruption (its length can
// not be trusted), a flipped payload byte a torn tail (never acknowledged
// whole).
func TestJournalFlipInLastRecord(t *testing.T) {
	recs := testRecords(3)
	path := filepath.Join(t.TempDir(), "j")
	offs := writeJournal(t, path, recs)
	orig, _ := os.ReadFile(path)
	last := offs[len(recs)-1]
	for pos := last; pos < int64(len(orig)); pos++ {
		bad := bytes.Clone(orig)
		bad[pos] ^= 0xff
		got, tail, err := Decode(bad)
		if pos < last+8 {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d: got %v, want corruption", pos, err)
			}
			continue
		}
		if err != nil || tail == nil || tail.Offset != last {
			t.Fatalf("byte %d: got %v %v, want torn tail", pos, tail, err)
		}
		assertRecords(t, got, recs[:len(recs)-1])
	}
}

// A tail of zeros (the size grew, the data never reached the disk) is torn,
// whatever its length, as is a valid header whose payload stayed zero.
func TestJournalZeroFilledTail(t *testing.T) {
	recs := testRecords(3)
	var good []byte
	for _, r := range recs {
		good = append(good, EncodeFrame(r)...)
	}
	zeroPayload := EncodeFrame([]byte("payload never written"))
	clear(zeroPayload[frameHeaderSize:])
	for _, tt := range []struct {
		name string
		tail []byte
	}{
		{"1 byte", make([]byte, 1)},
		{"short header", make([]byte, frameHeaderSize-1)},
		{"header", make([]byte, frameHeaderSize)},
		{"page", make([]byte, 4096)},
		{"zero payload", zeroPayload},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j")
			must(t, os.WriteFile(path, append(bytes.Clone(good), tt.tail...), 0o600))
			j, got, tail, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			assertRecords(t, got, recs)
			if tail == nil || tail.Offset != int64(len(good)) || tail.Dropped != int64(len(tt.tail)) {
				t.Fatalf("tail %+v", tail)
			}
			if _, err := j.Repair(); err != nil {
				t.Fatal(err)
			}
			must(t, j.Append([]byte("next")))
			got, tail, err = Scan(path)
			if err != nil || tail != nil || len(got) != len(recs)+1 {
				t.Fatalf("after append: %q %v %v", got, tail, err)
			}
		})
	}
}

// A header whose checksum holds but whose length is out of range is
// corruption, not a torn tail.
func TestDecodeRefusesBadLength(t *testing.T) {
	for _, n := range []uint32{0, MaxRecordSize + 1} {
		frame := EncodeFrame([]byte("x"))
		binary.LittleEndian.PutUint32(frame[0:4], n)
		binary.LittleEndian.PutUint32(frame[4:8], crc32.Checksum(frame[0:4], castagnoli()))
		if _, _, err := Decode(append(frame, EncodeFrame([]byte("y"))...)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("length %d: got %v", n, err)
		}
	}
}

// Every repair keeps one copy, that of the last cut: thirty torn tails
// leave one <name>.broken, holding the thirtieth original, and LastCut
// describes that cut.
func TestJournalKeepsOnlyTheLastCut(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j")
	writeJournal(t, path, testRecords(2))
	var want Tail
	for i := range 30 {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		frame := EncodeFrame([]byte(fmt.Sprintf("record %d never acknowledged", i)))
		_, err = f.Write(frame[:frameHeaderSize+i%5+1])
		must(t, err)
		must(t, f.Close())
		before, _ := os.ReadFile(path)
		j, _, tail, err := Open(path)
		must(t, err)
		cut, err := j.Repair()
		must(t, err)
		if cut == nil || cut.Offset != tail.Offset {
			t.Fatalf("repair %d: %+v", i, cut)
		}
		must(t, j.Append([]byte(fmt.Sprintf("record %d", i))))
		must(t, j.Close())
		if b, _ := os.ReadFile(cut.Copy); !bytes.Equal(b, before) {
			t.Fatalf("repair %d: the copy is not the last original", i)
		}
		want = *cut
	}
	names, err := filepath.Glob(path + BrokenSuffix + "*")
	must(t, err)
	if len(names) != 1 || names[0] != path+BrokenSuffix {
		t.Fatalf("copies kept: %v", names)
	}
	got, err := LastCut(path)
	if err != nil || got == nil || *got != want {
		t.Fatalf("last cut %+v %v, want %+v", got, err, want)
	}
	recs, tail, err := Scan(path)
	if err != nil || tail != nil || len(recs) != 32 {
		t.Fatalf("journal after thirty repairs: %d records, %v, %v", len(recs), tail, err)
	}
}

// LastCut of a journal never repaired is nil, and a copy without a torn
// tail is an error, not a cut.
func TestLastCutWithoutCopy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j")
	writeJournal(t, path, testRecords(1))
	if lc, err := LastCut(path); lc != nil || err != nil {
		t.Fatalf("got %+v %v", lc, err)
	}
	writeJournal(t, path+BrokenSuffix, testRecords(1))
	if lc, err := LastCut(path); err == nil {
		t.Fatalf("a whole journal taken for a cut: %+v", lc)
	}
}

// TestJournalNobodyChild is the unprivileged process of
// TestJournalCreateInUnwritableDirectory.
func TestJournalNobodyChild(t *testing.T) {
	safefiletest.UnwritableChild(t, "OAC_JOURNAL_NOBODY_PATH", createJournal)
}

// Creating a journal in a directory the process may not write fails with a
// permission error and leaves nothing behind, as root too (the attempt
// then runs as nobody).
func TestJournalCreateInUnwritableDirectory(t *testing.T) {
	safefiletest.Unwritable(t, "TestJournalNobodyChild", "OAC_JOURNAL_NOBODY_PATH", createJournal)
}

func createJournal(path string) error {
	j, err := Create(path, 0o600)
	if err == nil {
		j.Close()
	}
	return err
}
