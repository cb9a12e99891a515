// Package diskpeak measures the peak extra disk a run uses: the largest
// drop of the free space of the file systems holding some paths, sampled
// while the run goes on, summed over the distinct file systems. The bench
// measures use it (a run's own files, and the Docker Engine's growth).
package diskpeak

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Interval is how often the free space is read.
const Interval = 20 * time.Millisecond

// Sampler samples until Stop.
type Sampler struct {
	paths []string
	mu    sync.Mutex
	fss   map[uint64]*fsFree
	stop  chan struct{}
	done  chan struct{}
}

type fsFree struct{ base, min int64 }

// free returns the file system of p and its free bytes (0 when unknown).
func free(p string) (uint64, int64) {
	var st unix.Statfs_t
	if unix.Statfs(p, &st) != nil {
		return 0, 0
	}
	return uint64(st.Fsid.Val[0])<<32 | uint64(uint32(st.Fsid.Val[1])), int64(st.Bavail) * int64(st.Bsize)
}

// Start takes the free space of the file systems of paths as the base and
// samples it until Stop.
func Start(paths ...string) *Sampler {
	s := &Sampler{paths: paths, fss: map[uint64]*fsFree{}, stop: make(chan struct{}), done: make(chan struct{})}
	for _, p := range paths {
		if id, n := free(p); n > 0 {
			s.fss[id] = &fsFree{n, n}
		}
	}
	go s.run()
	return s
}

func (s *Sampler) run() {
	defer close(s.done)
	t := time.NewTicker(Interval)
	defer t.Stop()
	for {
		for _, p := range s.paths {
			if id, n := free(p); n > 0 {
				s.mu.Lock()
				if f := s.fss[id]; f != nil && n < f.min {
					f.min = n
				}
				s.mu.Unlock()
			}
		}
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
	}
}

// Stop ends the sampling and returns the peak extra disk in bytes: for
// each file system the largest drop below its base, summed.
func (s *Sampler) Stop() int64 {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, f := range s.fss {
		n += f.base - f.min
	}
	return n
}
