package image

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
)

// A proof is a fact about bytes named by their digests: the archive of
// a.Size bytes with sha256 a.SHA256 gunzips to a.UnpackedSize bytes with
// sha256 a.UnpackedSHA256 holding the image a.Want. Once proven in this
// process (by VerifyArchive, or by a Prover while the archive arrived) it
// holds for any bytes with those digests, wherever they are read from, so
// it is remembered for the process: the import then only has to check that
// what it hands the engine has the digests (LoadReader). The set is small
// (one archive a run) and lost with the process; a run that finds no proof
// proves again with VerifyArchive.
var proofs struct {
	sync.Mutex
	m map[Archive]Identity
}

// maxProofs bounds the remembered proofs; past it the oldest is dropped
// at random, which only costs a VerifyArchive.
const maxProofs = 8

func remember(a Archive, id Identity) {
	proofs.Lock()
	defer proofs.Unlock()
	if proofs.m == nil {
		proofs.m = map[Archive]Identity{}
	}
	for k := range proofs.m {
		if len(proofs.m) < maxProofs {
			break
		}
		delete(proofs.m, k)
	}
	proofs.m[a] = id
}

// Proven returns the identity proven for a in this process, if any.
func Proven(a Archive) (Identity, bool) {
	proofs.Lock()
	defer proofs.Unlock()
	id, ok := proofs.m[a]
	return id, ok
}

// Prover proves an archive from its bytes as they are written to it, in
// order from the first, without reading them again: the download hands it
// what arrives (download.Request.Observe) and the proof is done when the
// last byte is. It proves what VerifyArchive proves, on goroutines of its
// own (gunzip with the compressed hash on one, the unpacked hash and the
// identity scan on another), so the download is slowed only when the proof
// falls behind the network. Write copies the bytes: the caller may reuse
// them. Restart drops what was written (the download starts again from
// byte 0). Close ends the bytes and returns the proof; a proof that holds
// is remembered (Proven). Memory is bounded whatever the archive's size.
type Prover struct {
	a    Archive
	feed chan []byte
	free chan []byte
	done chan struct{}
	id   Identity
	err  error
}

const (
	proverChunk = 1 << 20 // compressed bytes a chunk of the feed holds
	proverDepth = 8       // chunks in flight between the writer and the proof
)

// NewProver starts the proof of a.
func NewProver(a Archive) (*Prover, error) {
	if !a.valid() {
		return nil, fmt.Errorf("prove image archive: %w: %+v", ErrBadDigest, a)
	}
	p := &Prover{a: a, free: make(chan []byte, proverDepth)}
	for range proverDepth {
		p.free <- make([]byte, proverChunk)
	}
	p.start()
	return p, nil
}

func (p *Prover) start() {
	p.feed, p.done, p.id, p.err = make(chan []byte, proverDepth), make(chan struct{}), Identity{}, nil
	feed, done := p.feed, p.done
	go func() {
		defer close(done)
		r := &feedReader{feed: feed, free: p.free}
		p.id, p.err = prove(r, "runtime.tar.gz (as it arrived)", p.a)
		r.drain()
	}()
}

// Observe is Write without a result, for download.Observer.
func (p *Prover) Observe(b []byte) { _, _ = p.Write(b) }

// Write hands the proof the next bytes of the archive. A proof that has
// already failed takes them without looking.
func (p *Prover) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		var buf []byte
		select {
		case buf = <-p.free:
		case <-p.done:
			return n, nil
		}
		m := copy(buf[:cap(buf)], b)
		select {
		case p.feed <- buf[:m]:
		case <-p.done:
			p.free <- buf
			return n, nil
		}
		b = b[m:]
	}
	return n, nil
}

// Restart drops the bytes written so far: the next Write is byte 0.
func (p *Prover) Restart() {
	close(p.feed)
	<-p.done
	p.start()
}

// Close ends the bytes and returns what they prove: the identity, or the
// refusal VerifyArchive would give for them (an archive that arrived only
// in part is ErrArchiveMismatch). A proof that holds is remembered.
func (p *Prover) Close() (Identity, error) {
	close(p.feed)
	<-p.done
	p.feed = nil
	if p.err != nil {
		return Identity{}, p.err
	}
	remember(p.a, p.id)
	return p.id, nil
}

// feedReader reads the chunks of a Prover's feed, returning each buffer to
// the pool once read.
type feedReader struct {
	feed <-chan []byte
	free chan<- []byte
	cur  []byte
	buf  []byte
}

func (r *feedReader) Read(b []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.buf != nil {
			r.free <- r.buf[:cap(r.buf)]
			r.buf = nil
		}
		c, ok := <-r.feed
		if !ok {
			return 0, io.EOF
		}
		r.buf, r.cur = c, c
	}
	n := copy(b, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// drain returns every chunk still in the feed to the pool until the feed
// is closed, so that a writer is never left waiting on a proof that ended.
func (r *feedReader) drain() {
	if r.buf != nil {
		r.free <- r.buf[:cap(r.buf)]
		r.buf, r.cur = nil, nil
	}
	for c := range r.feed {
		r.free <- c[:cap(c)]
	}
}

// LoadReader reads the compressed archive r and yields its gunzipped bytes,
// the tar stream the engine loads (docker load takes it as it is, with no
// decompression of its own in its path): the engine gets the bytes whose
// identity a proof of a established (VerifyArchive, a Prover; see Proven),
// and nothing else. The compressed bytes are hashed as they are read (the
// cheaper of the two hashes: equal compressed bytes gunzip to the proven
// stream), and the last bytes of the stream (at least loadHold of them,
// the tar's end among them) are held back until all of r has been read
// and matched a.Size and a.SHA256 and the stream a.UnpackedSize: a stream
// that is not the proven bytes ends in an error (ErrArchiveMismatch, or
// the read error) before the engine sees the end of the archive, and a
// load whose stream fails creates nothing. A stream longer than declared
// is stopped as soon as it passes it. Gunzip runs on its own goroutine;
// Close stops it.
func LoadReader(r io.Reader, a Archive) io.ReadCloser {
	l := &loadReader{a: a, src: &hashingReader{r: r, h: sha256.New(), limit: a.Size}, stop: make(chan struct{}),
		chunks: make(chan chunk, verifyChunkCount), free: make(chan []byte, verifyChunkCount), done: make(chan struct{})}
	for range verifyChunkCount {
		l.free <- make([]byte, verifyChunkSize)
	}
	go func() {
		defer close(l.done)
		inflate(l.src, a.UnpackedSize, l.chunks, l.free, l.stop)
	}()
	return l
}

// loadHold is how many bytes at least LoadReader holds back at the end.
const loadHold = verifyChunkSize

type loadReader struct {
	a      Archive
	src    *hashingReader // the compressed bytes, hashed
	n      int64          // gunzipped bytes received
	stop   chan struct{}
	chunks chan chunk
	free   chan []byte
	done   chan struct{}
	held   []chunk // received; b is what is not yet handed on
	heldN  int64   // the bytes of held not yet handed on
	ended  bool    // the stream ended and matched: held may all go
	err    error
	closed bool
}

func (l *loadReader) Read(b []byte) (int, error) {
	for {
		switch {
		case len(l.held) > 0 && len(l.held[0].b) == 0:
			l.free <- l.held[0].buf
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

// receive takes the next chunk from the inflater and holds it, or takes
// the end of the stream and checks it.
func (l *loadReader) receive() {
	c, ok := <-l.chunks
	switch {
	case ok && c.err == nil:
		l.n += int64(len(c.b))
		l.held = append(l.held, c)
		l.heldN += int64(len(c.b))
		return
	case ok:
		l.err = c.err
	default:
		// gzip stops at the end of its last member; the file's bytes
		// after it are hashed all the same (the inflater is done with
		// the reader).
		l.err = l.src.drain()
	}
	if l.src.err != nil && !errors.Is(l.src.err, errTooLong) {
		l.err = fmt.Errorf("read image archive: %w", l.src.err)
		return
	}
	if got := hex.EncodeToString(l.src.h.Sum(nil)); l.err != nil || l.src.over || l.src.n != l.a.Size || got != l.a.SHA256 || l.n != l.a.UnpackedSize {
		cause := ""
		if l.err != nil {
			cause = " (" + l.err.Error() + ")"
		}
		l.err = fmt.Errorf("%w: the archive read for the load is not the one proven: %d bytes with sha256 %s, read so far, gunzipped to %d bytes%s; proven: %d bytes with sha256 %s, gunzipped to %d bytes",
			ErrArchiveMismatch, l.src.n, got, l.n, cause, l.a.Size, l.a.SHA256, l.a.UnpackedSize)
		return
	}
	l.ended = true
}

// Close stops the inflater and waits for it.
func (l *loadReader) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	close(l.stop)
	for range l.chunks {
	}
	<-l.done
	return nil
}
