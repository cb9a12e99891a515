package download

import (
	"context"
	"sync/atomic"
	"time"
)

// stallSamples is the number of samples per stall window: the rule is
// checked over a window sliding in steps of window/stallSamples.
const stallSamples = 12

// watchStall cancels ctx with cause ErrStalled when fewer than min bytes
// were counted within any window. It returns the function that stops
// watching. The window starts with the request, so a server that accepts
// the connection and then says nothing stalls too.
func watchStall(cancel context.CancelCauseFunc, counter *atomic.Int64, window time.Duration, min int64) (stop func()) {
	done := make(chan struct{})
	step := window / stallSamples
	if step <= 0 {
		step = window
	}
	go func() {
		t := time.NewTicker(step)
		defer t.Stop()
		// ring[i] is the count i steps ago; the window is stallSamples steps.
		ring := make([]int64, stallSamples+1)
		ticks := 0
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			now := counter.Load()
			copy(ring[1:], ring[:stallSamples])
			ring[0] = now
			ticks++
			if ticks >= stallSamples && now-ring[stallSamples] < min {
				cancel(ErrStalled)
				return
			}
		}
	}()
	return func() { close(done) }
}
