package image

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// LoadReader reads the compressed archive r once and yields its gunzipped
// bytes, the tar stream the engine loads (docker load takes it as it is,
// with no decompression of its own), while it proves from those same
// bytes everything VerifyArchive proves: r's size and sha256, the
// gunzipped size and sha256, and the image identity a.Want (derived as
// Identify derives it, every blob hashed as it passes). The engine never
// gets more than the proven bytes allow it to load: the last bytes of the
// stream (at least loadHold of them: the tar's end and, in a docker save
// archive, its index and manifests among them) are held back until the
// proof has concluded on all of r. A proof that fails ends the stream in
// its refusal (ErrArchiveMismatch, ErrUnpackMismatch, the errors Identify
// returns, ErrIdentityMismatch) or the read error, instead of the end of
// the archive, and a load whose stream fails creates nothing: the engine
// holds the image only if the proof held, and then holds exactly the
// proven bytes. A stream longer than declared is stopped as soon as it
// passes it.
//
// Gunzip (with the compressed hash) runs on one goroutine, the unpacked
// hash and the identity scan on another, reading the very chunks the
// engine gets, so the bytes are decompressed once for both. Memory is
// bounded by the chunk pool, whatever the archive's size. Close stops
// both goroutines (a Read after Close fails); a Read after the end is
// io.EOF or the error that ended the stream.
func LoadReader(r io.Reader, a Archive) io.ReadCloser {
	l := &loadReader{stop: make(chan struct{}), toLoad: make(chan chunk, verifyChunkCount),
		verdict: make(chan error, 1), free: make(chan []byte, loadChunkCount)}
	if !a.valid() {
		l.err = fmt.Errorf("load image archive: %w: %+v", ErrBadDigest, a)
		l.gotVerdict = true
		close(l.toLoad)
		return l
	}
	for range loadChunkCount {
		l.free <- make([]byte, verifyChunkSize)
	}
	src := &hashingReader{r: r, h: sha256.New(), limit: a.Size}
	chunks := make(chan chunk, verifyChunkCount)
	toScan := make(chan chunk, verifyChunkCount)
	inflated, dispatched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(inflated)
		inflate(src, a.UnpackedSize, chunks, l.free, l.stop)
	}()
	// Each chunk goes to the scan and to the engine; its buffer returns
	// to the pool once both are done with it.
	go func() {
		defer close(dispatched)
		defer close(l.toLoad)
		defer close(toScan)
		for c := range chunks {
			if c.err == nil {
				c.refs = new(atomic.Int32)
				c.refs.Store(2)
			}
			select {
			case toScan <- c:
			case <-l.stop:
				return
			}
			if c.err != nil {
				return // the proof reports it; the engine gets no more
			}
			select {
			case l.toLoad <- c:
			case <-l.stop:
				return
			}
		}
	}()
	go func() {
		cr := &chunkReader{chunks: toScan, release: l.release}
		_, err := conclude(cr, src, "runtime.tar.gz", a, func() error {
			<-dispatched
			<-inflated
			select {
			case <-l.stop:
				return errStopped
			default:
				return nil
			}
		})
		l.verdict <- err
	}()
	return l
}

// errStopped ends a proof whose reader was closed before its end.
var errStopped = errors.New("the load's stream was closed before its end")

// loadChunkCount is the pool of a LoadReader: the chunks the inflater, the
// scan and the engine's side hold at once, the held-back end included.
const loadChunkCount = 2 * verifyChunkCount

// loadHold is how many bytes at least LoadReader holds back at the end.
const loadHold = verifyChunkSize

type loadReader struct {
	stop       chan struct{}
	toLoad     chan chunk // the chunks for the engine, in order
	verdict    chan error // the proof's outcome, sent once
	gotVerdict bool
	free       chan []byte
	held       []chunk // received; b is what is not yet handed on
	heldN      int64   // the bytes of held not yet handed on
	ended      bool    // the proof held: everything may go
	err        error
	closed     bool
}

// release returns c's buffer to the pool once its last user is done.
func (l *loadReader) release(c chunk) {
	if c.buf != nil && (c.refs == nil || c.refs.Add(-1) == 0) {
		l.free <- c.buf
	}
}

func (l *loadReader) Read(b []byte) (int, error) {
	if l.closed {
		return 0, io.ErrClosedPipe
	}
	for {
		switch {
		case len(l.held) > 0 && len(l.held[0].b) == 0:
			l.release(l.held[0])
			l.held = l.held[1:]
		case len(l.held) > 0 && (l.ended || l.heldN-int64(len(l.held[0].b)) >= loadHold):
			n := copy(b, l.held[0].b)
			l.held[0].b = l.held[0].b[n:]
			l.heldN -= int64(n)
			return n, nil
		case l.ended:
			return 0, io.EOF
		case l.err != nil:
			return 0, l.err
		default:
			l.receive()
		}
	}
}

// receive takes the next chunk for the engine and holds it, or, at the end
// of the chunks, the proof's verdict.
func (l *loadReader) receive() {
	if c, ok := <-l.toLoad; ok {
		l.held = append(l.held, c)
		l.heldN += int64(len(c.b))
		return
	}
	l.gotVerdict = true
	if err := <-l.verdict; err != nil {
		l.err = err
		return
	}
	l.ended = true
}

// Close stops the goroutines and waits for them to end.
func (l *loadReader) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	close(l.stop)
	for range l.toLoad {
	}
	if !l.gotVerdict {
		l.gotVerdict = true
		<-l.verdict
	}
	return nil
}
