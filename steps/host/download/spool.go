package download

// spool writes received chunks to the part file in a goroutine of its own,
// so that receiving, decrypting and hashing never wait for the page cache
// or the disk. The receiving goroutine hashes a chunk, hands it over with
// its offset and takes the next free buffer; the writer returns buffers
// as it finishes them. A write failure stops the receiver at its next
// buffer; finish waits for every queued write.
type spool struct {
	p      *part
	free   chan []byte
	queue  chan chunk
	failed chan struct{} // closed on the first write error, after err is set
	done   chan struct{} // closed when the writer has drained the queue
	err    error
}

type chunk struct {
	b   []byte
	off int64
}

func startSpool(p *part, bufs [][]byte) *spool {
	s := &spool{
		p:      p,
		free:   make(chan []byte, len(bufs)),
		queue:  make(chan chunk, len(bufs)),
		failed: make(chan struct{}),
		done:   make(chan struct{}),
	}
	for _, b := range bufs {
		s.free <- b
	}
	go s.run()
	return s
}

func (s *spool) run() {
	defer close(s.done)
	for c := range s.queue {
		if s.err == nil {
			if err := s.p.writeAt(c.b, c.off); err != nil {
				s.err = err
				close(s.failed)
			}
		}
		s.free <- c.b[:cap(c.b)]
	}
}

// buffer returns a free buffer, or the write error that stopped the spool.
func (s *spool) buffer() ([]byte, error) {
	select {
	case b := <-s.free:
		return b, nil
	case <-s.failed:
		return nil, s.err
	}
}

// write queues b for writing at off; b belongs to the spool from now on.
func (s *spool) write(b []byte, off int64) { s.queue <- chunk{b, off} }

// release gives back a buffer that holds nothing to write.
func (s *spool) release(b []byte) { s.free <- b[:cap(b)] }

// finish waits until every queued chunk is written and returns the first
// write error.
func (s *spool) finish() error {
	close(s.queue)
	<-s.done
	return s.err
}
