package imagetest

import (
	"bytes"
	"compress/gzip"
	"io"
	"runtime"
)

// pgzipBlock is the input size of one gzip member.
const pgzipBlock = 4 << 20

// pgzipWriter compresses its input in blocks, each an independent gzip
// member, on all cores, and writes the members in order: the result is
// one valid gzip file (RFC 1952 allows a sequence of members; gunzip, Go's
// gzip.Reader and Python's gzip read it as one stream). Compression is
// the slow part of building a large fixture; this divides it by the
// number of cores at a negligible cost in size.
type pgzipWriter struct {
	out   io.Writer
	level int
	buf   []byte
	queue chan chan []byte // members in input order
	sem   chan struct{}
	done  chan error
	wrote bool
}

func newPgzipWriter(out io.Writer, level int) *pgzipWriter {
	n := runtime.GOMAXPROCS(0)
	z := &pgzipWriter{
		out:   out,
		level: level,
		queue: make(chan chan []byte, 2*n),
		sem:   make(chan struct{}, n),
		done:  make(chan error, 1),
	}
	go func() {
		var err error
		for res := range z.queue {
			b := <-res
			if err == nil {
				_, err = out.Write(b)
			}
		}
		z.done <- err
	}()
	return z
}

func (z *pgzipWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if z.buf == nil {
			z.buf = make([]byte, 0, pgzipBlock)
		}
		c := min(len(p), pgzipBlock-len(z.buf))
		z.buf = append(z.buf, p[:c]...)
		p = p[c:]
		if len(z.buf) == pgzipBlock {
			z.dispatch()
		}
	}
	return n, nil
}

func (z *pgzipWriter) dispatch() {
	block := z.buf
	z.buf = nil
	z.wrote = true
	res := make(chan []byte, 1)
	z.queue <- res
	z.sem <- struct{}{}
	go func() {
		defer func() { <-z.sem }()
		var out bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&out, z.level)
		zw.Write(block) // writes to a bytes.Buffer do not fail
		zw.Close()
		res <- out.Bytes()
	}()
}

// Close compresses what is buffered and waits until every member is
// written; it returns the first write error.
func (z *pgzipWriter) Close() error {
	if len(z.buf) > 0 || !z.wrote {
		z.dispatch()
	}
	close(z.queue)
	return <-z.done
}
