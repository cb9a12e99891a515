package image

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal"
)

const (
	chunkSize   = 1 << 20 // decompressed bytes handed from the inflater to the writer at a time
	chunkCount  = 8       // chunks in flight
	writeback   = 8 << 20 // start writeback of the temporary file every this many bytes
	unpackedMod = 0o600
)

// Unpack gunzips gzPath (the verified runtime.tar.gz) to tarPath. The
// decompressed bytes go to a private temporary file next to tarPath while
// their size and sha256 are computed in the same pass; only when they equal
// wantSize and wantSHA256 (the manifest's unpacked_size and unpacked_sha256,
// 64 lowercase hex) is the file given mode 0600, fsynced and renamed over
// tarPath, and the directory fsynced. On any failure the temporary file is
// removed and tarPath is left as it was: it never holds unverified bytes. A
// stream longer than wantSize is stopped as soon as it passes it. gzPath is
// opened without following a final symbolic link.
//
// Decompression runs on one goroutine and writing and hashing on another,
// so the cost over a bare gunzip is close to nothing on two cores.
func Unpack(gzPath, tarPath string, wantSize int64, wantSHA256 string) error {
	_, err := unpack(gzPath, tarPath, wantSize, wantSHA256, false)
	return err
}

// UnpackIdentify is Unpack followed by Identify of the result, done in the
// same pass over the decompressed stream: tarPath is published only when
// the size and sha256 match and the archive's identity is proven (see
// Identify for the checks). Mismatches wrap ErrUnpackMismatch; refusals of
// the archive's contents wrap the errors Identify returns.
func UnpackIdentify(gzPath, tarPath string, wantSize int64, wantSHA256 string) (Identity, error) {
	return unpack(gzPath, tarPath, wantSize, wantSHA256, true)
}

func unpack(gzPath, tarPath string, wantSize int64, wantSHA256 string, identify bool) (Identity, error) {
	if wantSize <= 0 || !hexRE.MatchString(wantSHA256) {
		return Identity{}, fmt.Errorf("unpack %s: %w: unpacked size %d, sha256 %q", gzPath, ErrBadDigest, wantSize, wantSHA256)
	}
	src, err := openRegular(gzPath)
	if err != nil {
		return Identity{}, fmt.Errorf("unpack %s: %w", gzPath, err)
	}
	defer src.Close()
	dir, base := filepath.Split(tarPath)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return Identity{}, fmt.Errorf("unpack %s: %w", gzPath, err)
	}
	published := false
	defer func() {
		if !published {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()

	stop := make(chan struct{})
	chunks := make(chan chunk, chunkCount)
	free := make(chan []byte, chunkCount)
	for range chunkCount {
		free <- make([]byte, chunkSize)
	}
	go inflate(src, wantSize, chunks, free, stop)

	sink := &fileSink{f: tmp, h: sha256.New()}
	cr := &chunkReader{chunks: chunks, free: free, sink: sink.write}
	var (
		id      Identity
		scanErr error
	)
	if identify {
		er := &errReader{r: cr}
		s := newScanner()
		scanErr = s.scan(er)
		if scanErr == nil {
			id, scanErr = s.identity()
		}
		if er.err != nil {
			scanErr = nil // the stream's own failure is reported below
		}
	}
	// Whatever the scan concluded, read to the end: the size and sha256
	// decide first whether these are the bytes the manifest names.
	_, err = io.CopyBuffer(io.Discard, cr, make([]byte, 64<<10))
	close(stop)
	if err != nil {
		return Identity{}, fmt.Errorf("unpack %s: %w", gzPath, err)
	}
	if got := hex.EncodeToString(sink.h.Sum(nil)); sink.n != wantSize || got != wantSHA256 {
		return Identity{}, fmt.Errorf("unpack %s: %w: it unpacks to %d bytes with sha256 %s; the manifest says %d bytes with sha256 %s",
			gzPath, ErrUnpackMismatch, sink.n, got, wantSize, wantSHA256)
	}
	if scanErr != nil {
		return Identity{}, fmt.Errorf("image archive %s: %w", gzPath, scanErr)
	}
	if err := publishTemp(tmp, tarPath); err != nil {
		return Identity{}, fmt.Errorf("unpack %s to %s: %w", gzPath, tarPath, err)
	}
	published = true
	tmp.Close()
	journal.Failpoint("unpack-after-rename")
	if err := journal.SyncDir(dir); err != nil {
		return Identity{}, fmt.Errorf("unpack %s to %s: %w", gzPath, tarPath, err)
	}
	return id, nil
}

// chunk is a run of decompressed bytes, or the error that ended the stream.
type chunk struct {
	buf []byte // the pooled buffer, returned to free once consumed
	b   []byte
	err error
}

// inflate decompresses src into pooled chunks until the end of the stream,
// an error, more than limit bytes, or stop. It closes chunks when done.
func inflate(src io.Reader, limit int64, chunks chan<- chunk, free chan []byte, stop <-chan struct{}) {
	defer close(chunks)
	send := func(c chunk) bool {
		select {
		case chunks <- c:
			return true
		case <-stop:
			return false
		}
	}
	zr, err := gzip.NewReader(bufio.NewReaderSize(src, chunkSize))
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		send(chunk{err: fmt.Errorf("gunzip: %w", err)})
		return
	}
	var total int64
	for {
		var buf []byte
		select {
		case buf = <-free:
		case <-stop:
			return
		}
		n, err := fill(zr, buf)
		total += int64(n)
		if total > limit {
			send(chunk{err: fmt.Errorf("%w: it unpacks to more than the manifest's %d bytes", ErrUnpackMismatch, limit)})
			return
		}
		if n > 0 && !send(chunk{buf: buf, b: buf[:n]}) {
			return
		}
		switch {
		case err == io.EOF:
			return
		case err != nil:
			send(chunk{err: fmt.Errorf("gunzip: %w", err)})
			return
		}
	}
}

// fill reads into buf until it is full or r fails; unlike io.ReadFull it
// passes r's own io.ErrUnexpectedEOF (a truncated stream) through and
// reports a clean end as io.EOF.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// chunkReader reads the chunks in order, handing each to sink (which
// writes and hashes it) before its bytes are read.
type chunkReader struct {
	chunks <-chan chunk
	free   chan<- []byte
	sink   func([]byte) error
	buf    []byte
	cur    []byte
	err    error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.buf != nil {
			r.free <- r.buf
			r.buf = nil
		}
		if r.err != nil {
			return 0, r.err
		}
		c, ok := <-r.chunks
		switch {
		case !ok:
			r.err = io.EOF
		case c.err != nil:
			r.err = c.err
		default:
			r.buf, r.cur = c.buf, c.b
			if err := r.sink(c.b); err != nil {
				r.err, r.cur = err, nil
			}
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// WriteTo lets io.Copy consume whole chunks without copying them.
func (r *chunkReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		if len(r.cur) == 0 {
			var one [0]byte
			if _, err := r.Read(one[:]); err != nil {
				if err == io.EOF {
					return total, nil
				}
				return total, err
			}
			continue
		}
		n, err := w.Write(r.cur)
		total += int64(n)
		r.cur = r.cur[n:]
		if err != nil {
			return total, err
		}
	}
}

// fileSink writes to the temporary file, hashing and counting, and starts
// writeback every few MiB so that the final fsync has little left to do.
type fileSink struct {
	f       *os.File
	h       hash.Hash
	n       int64
	flushed int64
}

func (s *fileSink) write(b []byte) error {
	if _, err := s.f.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", s.f.Name(), err)
	}
	s.h.Write(b)
	s.n += int64(len(b))
	if s.n-s.flushed >= writeback {
		// Best effort: an error here only means fsync does the work later.
		_ = unix.SyncFileRange(int(s.f.Fd()), s.flushed, s.n-s.flushed, unix.SYNC_FILE_RANGE_WRITE)
		s.flushed = s.n
	}
	return nil
}
