package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

const (
	frameHeaderSize = 12
	// MaxRecordSize bounds one record's payload. Workflow records are small
	// (a step name and its output facts); a larger length is corruption.
	MaxRecordSize = 1 << 20
	// MaxJournalSize bounds a whole journal file: a workflow writes a few
	// hundred small records at most. A larger file is refused as corrupt
	// before it is read, so that a huge (sparse) file planted where a
	// journal is expected neither exhausts memory nor blocks inspection.
	MaxJournalSize = 64 << 20
	// BrokenSuffix names the copy kept of a journal whose torn tail was cut.
	BrokenSuffix = ".broken"
)

// castagnoli is CRC-32C's table, made at its first use rather than at
// start: a process that never reads or writes a journal (the service-account
// child of status or leases) skips it.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// ErrCorrupt is returned (wrapped in *CorruptError) when a journal holds a
// bad frame before its tail. Such a journal is never repaired automatically.
var ErrCorrupt = errors.New("journal corrupt")

// CorruptError names the journal file and the byte offset of the bad frame.
type CorruptError struct {
	Path   string
	Offset int64
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("journal %s is corrupt at offset %d: %s", e.Path, e.Offset, e.Reason)
}

// Unwrap lets callers test with errors.Is(err, ErrCorrupt).
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// Tail describes a torn final frame: found by Open or Scan (Copy empty), cut
// off by Repair (Copy names the kept original), or read back from that copy
// by LastCut.
type Tail struct {
	// Offset is where the torn frame started; the file is cut there.
	Offset int64 `json:"offset"`
	// Dropped is the number of bytes that followed Offset.
	Dropped int64 `json:"dropped"`
	// Copy is the path of the untouched original kept for inspection. It is
	// empty for a tail not cut (yet).
	Copy string `json:"copy,omitempty"`
}

func (t *Tail) String() string {
	if t.Copy == "" {
		return fmt.Sprintf("torn final record at offset %d (%d bytes)", t.Offset, t.Dropped)
	}
	return fmt.Sprintf("torn final record at offset %d (%d bytes) cut off; original kept as %s", t.Offset, t.Dropped, t.Copy)
}

// ErrTornTail is returned by Append on a journal opened with a torn tail
// that was not repaired: appending after the torn bytes would bury them.
var ErrTornTail = errors.New("journal has a torn tail that was not cut off")

// Journal is an append-only file of framed records. It is not safe for
// concurrent use; one workflow instance holds its lock and its journal.
type Journal struct {
	f    *os.File
	path string
	size int64
	// torn is the torn tail found by Open and not yet cut, original the
	// file's bytes as Open read them (kept only while torn is set).
	torn     *Tail
	original []byte
}

// Path returns the journal's file name.
func (j *Journal) Path() string { return j.path }

// Create makes a new, empty journal at path with mode perm. It fails if the
// path exists. The file and its directory are fsynced before Create returns,
// so the journal's existence is durable.
func Create(path string, perm os.FileMode) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return nil, fmt.Errorf("create journal %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil { // umask must not weaken or widen it
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("create journal %s: %w", path, err)
	}
	if err := safefile.Sync(f); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("create journal %s: %w", path, err)
	}
	if err := safefile.SyncDir(filepath.Dir(path)); err != nil {
		f.Close()
		return nil, fmt.Errorf("create journal %s: %w", path, err)
	}
	return &Journal{f: f, path: path}, nil
}

// Open opens an existing journal for appending and returns its records and
// the torn final frame, if any, without changing the file: deciding from
// the records whether to write at all comes first. Before the first Append
// to a journal with a torn tail, Repair must cut it off (Append refuses with
// ErrTornTail until then). Corruption before the tail returns a
// *CorruptError.
func Open(path string) (*Journal, [][]byte, *Tail, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	fail := func(err error) (*Journal, [][]byte, *Tail, error) {
		f.Close()
		return nil, nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return fail(fmt.Errorf("open journal %s: %w", path, err))
	}
	if !st.Mode().IsRegular() {
		return fail(fmt.Errorf("open journal %s: not a regular file", path))
	}
	if err := checkSize(path, st.Size()); err != nil {
		return fail(err)
	}
	data, err := io.ReadAll(io.NewSectionReader(f, 0, st.Size()))
	if err != nil {
		return fail(fmt.Errorf("read journal %s: %w", path, err))
	}
	recs, tail, err := Decode(data)
	if err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			ce.Path = path
		}
		return fail(err)
	}
	j := &Journal{f: f, path: path, size: int64(len(data))}
	if tail != nil {
		t := *tail
		j.torn, j.original = &t, data
	}
	return j, recs, tail, nil
}

// checkSize refuses a journal larger than MaxJournalSize as corrupt.
func checkSize(path string, size int64) error {
	if size <= MaxJournalSize {
		return nil
	}
	return &CorruptError{Path: path, Offset: MaxJournalSize,
		Reason: fmt.Sprintf("%d bytes, more than a journal holds (at most %d)", size, int64(MaxJournalSize))}
}

// Repair cuts off the torn tail Open found and returns it with Copy set; it
// returns nil when there was none. Before the cut, the whole original file
// is kept as <path>.broken, replacing the copy of an earlier cut: at most
// one copy exists, that of the last cut. Earlier copies would hold nothing
// else worth keeping: a torn frame is a record whose Append never returned,
// and the records before it stay in the journal. The copy is durable
// before the journal is truncated, and the truncation before Repair
// returns.
func (j *Journal) Repair() (*Tail, error) {
	if j.torn == nil {
		return nil, nil
	}
	cp := j.path + BrokenSuffix
	if err := safefile.AtomicWrite(cp, j.original, 0o600); err != nil {
		return nil, fmt.Errorf("keep copy of torn journal %s: %w", j.path, err)
	}
	if err := j.f.Truncate(j.torn.Offset); err != nil {
		return nil, fmt.Errorf("cut torn tail of journal %s: %w", j.path, err)
	}
	if err := safefile.Sync(j.f); err != nil {
		return nil, fmt.Errorf("cut torn tail of journal %s: %w", j.path, err)
	}
	t := *j.torn
	t.Copy = cp
	j.size = t.Offset
	j.torn, j.original = nil, nil
	return &t, nil
}

// LastCut describes the last cut Repair made on the journal at path, read
// from the copy it kept; nil when no copy exists. It changes nothing.
func LastCut(path string) (*Tail, error) {
	cp := path + BrokenSuffix
	_, tail, err := Scan(cp)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case tail == nil:
		return nil, fmt.Errorf("copy %s of a torn journal has no torn tail", cp)
	}
	tail.Copy = cp
	return tail, nil
}

// Scan reads a journal without changing it, for inspection. A torn tail is
// reported (with an empty Copy) and the records before it returned.
func Scan(path string) ([][]byte, *Tail, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	defer f.Close()
	return ScanFile(f, path)
}

// ScanFile is Scan over an already opened (for example safely opened) file.
func ScanFile(f *os.File, path string) ([][]byte, *Tail, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("open journal %s: not a regular file", path)
	}
	if err := checkSize(path, st.Size()); err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(io.NewSectionReader(f, 0, st.Size()))
	if err != nil {
		return nil, nil, fmt.Errorf("read journal %s: %w", path, err)
	}
	recs, tail, err := Decode(data)
	if err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			ce.Path = path
		}
		return nil, nil, err
	}
	return recs, tail, nil
}

// Append writes one record and returns only after it is durable (fdatasync).
// On error the journal must not be used again: the caller stops the run and
// the next open repairs or refuses what is on disk.
func (j *Journal) Append(payload []byte) error {
	if len(payload) == 0 || len(payload) > MaxRecordSize {
		return fmt.Errorf("append to journal %s: record size %d out of range 1..%d", j.path, len(payload), MaxRecordSize)
	}
	if j.torn != nil {
		return fmt.Errorf("append to journal %s: %w", j.path, ErrTornTail)
	}
	frame := EncodeFrame(payload)
	safefile.Failpoint("journal-before-write")
	n, err := j.f.Write(frame)
	if err != nil {
		return fmt.Errorf("append to journal %s: %w", j.path, err)
	}
	if n != len(frame) {
		return fmt.Errorf("append to journal %s: short write", j.path)
	}
	safefile.Failpoint("journal-before-sync")
	if err := appendFault(j.path, payload); err != nil {
		return fmt.Errorf("sync journal %s: %w", j.path, err)
	}
	if err := safefile.Fdatasync(j.f); err != nil {
		return fmt.Errorf("sync journal %s: %w", j.path, err)
	}
	safefile.Failpoint("journal-after-sync")
	j.size += int64(len(frame))
	return nil
}

// Close closes the file. Records appended before are already durable.
func (j *Journal) Close() error {
	if j == nil || j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// EncodeFrame returns the frame for one record.
func EncodeFrame(payload []byte) []byte {
	frame := make([]byte, frameHeaderSize+len(payload))
	binary.LittleEndian.PutUint32(frame[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(frame[4:8], crc32.Checksum(frame[0:4], castagnoli()))
	binary.LittleEndian.PutUint32(frame[8:12], crc32.Checksum(payload, castagnoli()))
	copy(frame[frameHeaderSize:], payload)
	return frame
}

// Decode splits a journal's bytes into records. It returns the records
// before a torn final frame together with a *Tail describing it, or a
// *CorruptError (without Path) for a bad frame before the tail.
func Decode(data []byte) ([][]byte, *Tail, error) {
	var recs [][]byte
	size := int64(len(data))
	off := int64(0)
	torn := func() ([][]byte, *Tail, error) {
		return recs, &Tail{Offset: off, Dropped: size - off}, nil
	}
	for off < size {
		rest := data[off:]
		if len(rest) < frameHeaderSize {
			return torn() // a crash inside the header write
		}
		length := binary.LittleEndian.Uint32(rest[0:4])
		hcrc := binary.LittleEndian.Uint32(rest[4:8])
		if crc32.Checksum(rest[0:4], castagnoli()) != hcrc {
			if allZero(rest) {
				return torn() // size grew, data never reached the disk
			}
			return recs, nil, &CorruptError{Offset: off, Reason: "frame header checksum mismatch"}
		}
		if length == 0 || length > MaxRecordSize {
			return recs, nil, &CorruptError{Offset: off, Reason: fmt.Sprintf("record length %d out of range", length)}
		}
		end := frameHeaderSize + int64(length)
		if end > int64(len(rest)) {
			return torn() // a crash inside the payload write
		}
		payload := rest[frameHeaderSize:end]
		if crc32.Checksum(payload, castagnoli()) != binary.LittleEndian.Uint32(rest[8:12]) {
			if end == int64(len(rest)) {
				return torn() // the final frame only: never acknowledged whole
			}
			return recs, nil, &CorruptError{Offset: off, Reason: "record checksum mismatch"}
		}
		recs = append(recs, bytes.Clone(payload))
		off += end
	}
	return recs, nil, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
