package testhost

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent use: written by copier
// goroutines (the test host's console, a child's relayed output, a
// program's log), read by the test.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
