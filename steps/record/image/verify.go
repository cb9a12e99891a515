package image

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
	"github.com/opencontainers/go-digest"
)

// Archive is what the release manifest declares of the compressed Runtime
// archive (runtime.tar.gz): its size and sha256, the size and sha256 of
// its gunzipped bytes (unpacked_size, unpacked_sha256), and the image's
// two identities. Digests are 64 lowercase hex; Want's are sha256:<hex>.
type Archive struct {
	Size           int64
	SHA256         string
	UnpackedSize   int64
	UnpackedSHA256 string
	Want           Identity
}

func (a Archive) valid() bool {
	return a.Size > 0 && validEncoded(a.SHA256) && a.UnpackedSize > 0 && validEncoded(a.UnpackedSHA256) &&
		validDigest(digest.Digest(a.Want.ConfigDigest)) && validDigest(digest.Digest(a.Want.ManifestDigest))
}

// VerifyArchive reads the compressed archive f from its start to its end
// once, streaming, and proves in that one pass everything the load relies
// on: f has a.Size bytes with sha256 a.SHA256; they gunzip to
// a.UnpackedSize bytes with sha256 a.UnpackedSHA256 (a longer stream is
// stopped as soon as it passes the size); the tar stream holds an image
// whose identity, derived and checked as Identify does (every blob hashed
// as it passes, every record cross-checked), is a.Want. Nothing is written
// anywhere. On success f is rewound to its start. (The import proves the
// archive while the engine loads it, LoadReader; VerifyArchive is the same
// proof without a load.)
//
// Refusals wrap ErrArchiveMismatch (the compressed bytes),
// ErrUnpackMismatch (the gunzipped bytes), the errors Identify returns, or
// ErrIdentityMismatch; read errors are returned as such.
//
// Decompression (with the compressed hash) runs on its own goroutine, the
// unpacked hash and the tar scan on the caller's, so the cost is close to
// a bare gunzip with a second core free. Memory is bounded by the chunk
// pool and the scanner's limits, whatever the archive's size.
func VerifyArchive(f *os.File, a Archive) (Identity, error) {
	if !a.valid() {
		return Identity{}, fmt.Errorf("verify image archive %s: %w: %+v", f.Name(), ErrBadDigest, a)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Identity{}, fmt.Errorf("verify image archive %s: %w", f.Name(), err)
	}
	id, err := prove(f, f.Name(), a)
	if err != nil {
		return Identity{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Identity{}, fmt.Errorf("verify image archive %s: %w", f.Name(), err)
	}
	return id, nil
}

// prove reads the compressed archive r to its end and proves a of it (see
// VerifyArchive); name says what r is in errors.
func prove(r io.Reader, name string, a Archive) (Identity, error) {
	src := &hashingReader{r: r, h: sha256.New(), limit: a.Size}
	stop := make(chan struct{})
	chunks := make(chan chunk, verifyChunkCount)
	free := make(chan []byte, verifyChunkCount)
	for range verifyChunkCount {
		free <- make([]byte, verifyChunkSize)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		inflate(src, a.UnpackedSize, chunks, free, stop)
	}()
	cr := &chunkReader{chunks: chunks, release: func(c chunk) { free <- c.buf }}
	return conclude(cr, src, name, a, func() error { close(stop); <-done; return nil })
}

// conclude reads cr, the gunzipped stream of the compressed bytes src
// reads, to its end, hashing it and deriving the image's identity on the
// way, and proves a: finish is called once the stream has ended (it ends
// what feeds cr; an error from it means the stream was abandoned, and is
// returned as it is); then the rest of src is read through its hash, and
// the sizes and sha256s are checked first (they decide whether these are
// the bytes the manifest names), the identity last.
func conclude(cr *chunkReader, src *hashingReader, name string, a Archive, finish func() error) (Identity, error) {
	h := sha256.New()
	var n int64
	cr.onChunk = func(b []byte) error { h.Write(b); n += int64(len(b)); return nil }
	er := &errReader{r: cr}
	s := newScanner()
	scanErr := s.scan(er)
	var id Identity
	if scanErr == nil {
		id, scanErr = s.identity()
	}
	if er.err != nil {
		scanErr = nil // the stream's own failure is reported below
	}
	// Whatever the scan concluded, read to the end: the sizes and sha256s
	// decide first whether these are the bytes the manifest names.
	_, err := io.CopyBuffer(io.Discard, cr, make([]byte, 64<<10))
	if ferr := finish(); ferr != nil {
		return Identity{}, ferr
	}
	if err == nil {
		// gzip stops at the end of its last member; what follows is
		// part of the file all the same and must be hashed.
		err = src.drain()
	}
	if src.err != nil && !errors.Is(src.err, errTooLong) {
		return Identity{}, fmt.Errorf("read image archive %s: %w", name, src.err)
	}
	if got := hex.EncodeToString(src.h.Sum(nil)); src.n != a.Size || got != a.SHA256 || src.over {
		return Identity{}, fmt.Errorf("image archive %s: %w: it has %d bytes with sha256 %s; the manifest says %d bytes with sha256 %s",
			name, ErrArchiveMismatch, src.n, got, a.Size, a.SHA256)
	}
	if err != nil {
		return Identity{}, fmt.Errorf("verify image archive %s: %w", name, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); n != a.UnpackedSize || got != a.UnpackedSHA256 {
		return Identity{}, fmt.Errorf("image archive %s: %w: it unpacks to %d bytes with sha256 %s; the manifest says %d bytes with sha256 %s",
			name, ErrUnpackMismatch, n, got, a.UnpackedSize, a.UnpackedSHA256)
	}
	if scanErr != nil {
		return Identity{}, fmt.Errorf("image archive %s: %w", name, scanErr)
	}
	if err := id.Check(a.Want); err != nil {
		return Identity{}, fmt.Errorf("image archive %s: %w", name, err)
	}
	return id, nil
}

// errTooLong stops a reader that passed its declared size.
var errTooLong = errors.New("longer than declared")

const (
	verifyChunkSize  = 1 << 20 // decompressed bytes handed on at a time
	verifyChunkCount = 8       // chunks in flight: memory stays flat in the archive's size
)

// hashingReader hashes and counts what is read through it, and stops with
// errTooLong once more than limit bytes came.
type hashingReader struct {
	r     io.Reader
	h     hash.Hash
	n     int64
	limit int64
	over  bool
	err   error
}

func (r *hashingReader) Read(p []byte) (int, error) {
	if r.over {
		return 0, errTooLong
	}
	m, err := r.r.Read(p)
	r.h.Write(p[:m])
	r.n += int64(m)
	if r.n > r.limit {
		r.over = true
		if err == nil || err == io.EOF {
			err = errTooLong
		}
	}
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return m, err
}

// drain reads what is left of the file through the hash.
func (r *hashingReader) drain() error {
	_, err := io.CopyBuffer(io.Discard, onlyReader{r}, make([]byte, 256<<10))
	if errors.Is(err, errTooLong) {
		return nil
	}
	return err
}

// onlyReader hides WriterTo so CopyBuffer uses the buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(b []byte) (int, error) { return o.r.Read(b) }

// IdentifyStream is IdentifyReader for an archive stream that may be
// gzip-compressed, as docker load accepts it: a stream starting with the
// gzip magic is gunzipped first.
func IdentifyStream(r io.Reader) (Identity, error) {
	br := bufio.NewReaderSize(r, copyBufSize)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return Identity{}, fmt.Errorf("read image archive: gunzip: %w", err)
		}
		return IdentifyReader(zr)
	}
	return IdentifyReader(br)
}
