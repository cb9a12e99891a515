package image

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"unsafe"

	"github.com/klauspost/compress/gzip"
	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

const (
	chunkSize  = 4 << 20 // decompressed bytes handed from the inflater on at a time
	chunkCount = 16      // chunks in flight
	writeback  = 8 << 20 // buffered writes: start writeback every this many bytes
	dioAlign   = 4096    // O_DIRECT alignment of buffers, offsets and lengths
)

// directIO lets tests force the buffered path.
var directIO = true

// Unpack gunzips gzPath (the verified runtime.tar.gz) to tarPath. The
// decompressed bytes go to a private pending file next to tarPath
// (safefile.Pending) while their size and sha256 are computed in the same
// pass; only when they equal wantSize and wantSHA256 (the manifest's
// unpacked_size and unpacked_sha256, 64 lowercase hex) is the file given
// mode 0600, fsynced and renamed over tarPath, and the directory fsynced
// (Pending.CommitReplace). On any failure the pending file is removed and
// tarPath is left as it was: it never holds unverified bytes. A
// stream longer than wantSize is stopped as soon as it passes it. gzPath is
// opened without following a final symbolic link. Temporary files of an
// interrupted earlier unpack of tarPath are removed first; the caller
// holds the installation lock.
//
// Decompression, hashing (and identifying) and writing run on three
// goroutines, so the cost over a bare gunzip is close to nothing with a
// second core free. The file is written with O_DIRECT where the file
// system allows it: it saves the page-cache copy, most of the CPU a
// buffered write of a large file costs.
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
	if wantSize <= 0 || !validEncoded(wantSHA256) {
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
	removeStaleTemps(dir, base)
	root, err := safefile.OpenRootTrusted(dir)
	if err != nil {
		return Identity{}, fmt.Errorf("unpack %s: %w", gzPath, err)
	}
	defer root.Close()
	pending, err := root.OpenPending(pendingName(base), "unpack")
	if err != nil {
		return Identity{}, fmt.Errorf("unpack %s: %w", gzPath, err)
	}
	published := false
	defer func() {
		if !published {
			pending.Discard()
		}
	}()
	tmp := pending.File()
	// removeStaleTemps removed what a killed unpack left; should a file
	// have appeared since, its bytes are not ours.
	if err := tmp.Truncate(0); err != nil {
		return Identity{}, fmt.Errorf("unpack %s: %w", gzPath, err)
	}

	stop := make(chan struct{})
	chunks := make(chan chunk, chunkCount)
	free := make(chan []byte, chunkCount)
	for range chunkCount {
		free <- alignedBuf(chunkSize)
	}
	go inflate(src, wantSize, chunks, free, stop)

	w := newChunkWriter(tmp, free)
	h := sha256.New()
	var n int64
	cr := &chunkReader{
		chunks: chunks,
		onChunk: func(b []byte) error {
			h.Write(b)
			n += int64(len(b))
			return w.failed()
		},
		release: w.queue,
	}
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
	if werr := w.close(); err == nil {
		err = werr
	}
	if err != nil {
		return Identity{}, fmt.Errorf("unpack %s: %w", gzPath, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); n != wantSize || got != wantSHA256 {
		return Identity{}, fmt.Errorf("unpack %s: %w: it unpacks to %d bytes with sha256 %s; the manifest says %d bytes with sha256 %s",
			gzPath, ErrUnpackMismatch, n, got, wantSize, wantSHA256)
	}
	if scanErr != nil {
		return Identity{}, fmt.Errorf("image archive %s: %w", gzPath, scanErr)
	}
	// Mode 0600, fsync, rename over tarPath, fsync the directory; the
	// failpoints are unpack-before-rename and unpack-after-rename.
	if err := pending.CommitReplace(base, 0o600); err != nil {
		return Identity{}, fmt.Errorf("unpack %s to %s: %w", gzPath, tarPath, err)
	}
	published = true
	return id, nil
}

// pendingName is the private name tarPath's bytes are written under until
// they are verified. It matches the pattern of removeStaleTemps (and of
// the generation step's cleanup of unpack leftovers).
func pendingName(base string) string { return "." + base + ".tmp-unpack" }

// removeStaleTemps removes the temporary files an interrupted earlier
// unpack of the same target left (a SIGKILL skips the cleanup): the
// pending file, and the randomly named temporary files of earlier
// versions. Each can be as large as the archive. Only regular files are
// removed. The caller holds the installation lock, so no other unpack of
// this target runs (two would share the pending file).
func removeStaleTemps(dir, base string) {
	stale, _ := filepath.Glob(filepath.Join(dir, "."+globEscape(base)+".tmp-*"))
	for _, p := range stale {
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			os.Remove(p)
		}
	}
}

// globEscape quotes the pattern characters of a file name.
func globEscape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}

// chunk is a run of decompressed bytes, or the error that ended the stream.
type chunk struct {
	buf  []byte // the pooled buffer, returned to free once consumed
	b    []byte
	err  error
	refs *atomic.Int32 // its users, when more than one (LoadReader)
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

// chunkReader reads the chunks in order. onChunk sees each chunk before
// its bytes are read (and may stop the stream with an error); release gets
// each chunk once it has been read to its end, or when reading stops.
type chunkReader struct {
	chunks  <-chan chunk
	onChunk func([]byte) error
	release func(chunk)
	held    chunk
	cur     []byte
	err     error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.held.buf != nil {
			r.release(r.held)
			r.held = chunk{}
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
			r.held, r.cur = c, c.b
			if err := r.onChunk(c.b); err != nil {
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
			var none [0]byte
			if _, err := r.Read(none[:]); err != nil {
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

// chunkWriter writes chunks to the temporary file on its own goroutine and
// returns their buffers to the pool. It writes with O_DIRECT when the file
// system accepts it (full, aligned chunks; the last one padded, and the
// file cut back to size on close), else buffered, starting writeback every
// few MiB so that the final fsync has little left to do.
type chunkWriter struct {
	f       *os.File
	free    chan<- []byte
	in      chan chunk
	done    chan error
	direct  bool
	n       int64
	padded  bool
	flushed int64
	err     atomic.Pointer[error]
}

func newChunkWriter(f *os.File, free chan<- []byte) *chunkWriter {
	w := &chunkWriter{f: f, free: free, in: make(chan chunk, chunkCount), done: make(chan error, 1)}
	if directIO {
		w.direct = setDirect(f, true) == nil
	}
	go w.run()
	return w
}

// queue hands a consumed chunk to the writer.
func (w *chunkWriter) queue(c chunk) { w.in <- c }

// failed returns the writer's error, if it has failed.
func (w *chunkWriter) failed() error {
	if p := w.err.Load(); p != nil {
		return *p
	}
	return nil
}

func (w *chunkWriter) run() {
	var err error
	for c := range w.in {
		if err == nil {
			if err = w.write(c.b); err != nil {
				err = fmt.Errorf("write %s: %w", w.f.Name(), err)
				w.err.Store(&err)
			}
		}
		w.free <- c.buf
	}
	w.done <- err
}

func (w *chunkWriter) write(b []byte) error {
	if w.padded {
		return errors.New("a short chunk was not the last one")
	}
	if w.direct {
		full := (len(b) + dioAlign - 1) &^ (dioAlign - 1)
		_, err := w.f.Write(b[:full]) // the buffer's capacity is a whole chunk
		if errors.Is(err, unix.EINVAL) && w.n == 0 {
			// Accepted at open, refused at write: write buffered instead.
			w.direct = false
			if err := setDirect(w.f, false); err != nil {
				return err
			}
			if _, err := w.f.Seek(0, io.SeekStart); err != nil {
				return err
			}
			return w.write(b)
		}
		if err != nil {
			return err
		}
		w.n += int64(len(b))
		w.padded = full != len(b)
		return nil
	}
	if _, err := w.f.Write(b); err != nil {
		return err
	}
	w.n += int64(len(b))
	if w.n-w.flushed >= writeback {
		// Best effort: an error here only means fsync does the work later.
		_ = unix.SyncFileRange(int(w.f.Fd()), w.flushed, w.n-w.flushed, unix.SYNC_FILE_RANGE_WRITE)
		w.flushed = w.n
	}
	return nil
}

// close waits for the queued chunks to be written, cuts a padded file back
// to the bytes written and leaves O_DIRECT mode.
func (w *chunkWriter) close() error {
	close(w.in)
	err := <-w.done
	if err == nil && w.padded {
		if err = w.f.Truncate(w.n); err != nil {
			err = fmt.Errorf("write %s: %w", w.f.Name(), err)
		}
	}
	if w.direct {
		if serr := setDirect(w.f, false); err == nil && serr != nil {
			err = fmt.Errorf("write %s: %w", w.f.Name(), serr)
		}
	}
	return err
}

// setDirect turns O_DIRECT on or off for f.
func setDirect(f *os.File, on bool) error {
	fd := int(f.Fd())
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	if on {
		flags |= unix.O_DIRECT
	} else {
		flags &^= unix.O_DIRECT
	}
	_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags)
	return err
}

// alignedBuf returns a buffer of size bytes whose address is a multiple of
// dioAlign (the Go heap does not move objects).
func alignedBuf(size int) []byte {
	b := make([]byte, size+dioAlign)
	off := int(uintptr(unsafe.Pointer(&b[0])) & (dioAlign - 1))
	if off != 0 {
		off = dioAlign - off
	}
	return b[off : off+size : off+size]
}
