package install

import (
	"context"
	"errors"
	"testing"
	"time"
)

// recordSleeps replaces sleepCtx for the test with one that records each
// requested sleep and returns at once.
func recordSleeps(t *testing.T) *[]time.Duration {
	t.Helper()
	var got []time.Duration
	old := sleepCtx
	sleepCtx = func(ctx context.Context, d time.Duration) error {
		got = append(got, d)
		return ctx.Err()
	}
	t.Cleanup(func() { sleepCtx = old })
	return &got
}

func TestReadyPollsAtOnceThenBacksOffTo2s(t *testing.T) {
	sleeps := recordSleeps(t)
	polls := 0
	ready, _, err := pollUntil(context.Background(), time.Now().Add(time.Minute), func(context.Context) (bool, string, error) {
		polls++
		return polls == 9, "not yet", nil
	})
	if err != nil || !ready {
		t.Fatalf("ready %v, err %v", ready, err)
	}
	ms := time.Millisecond
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 2000 * ms, 2000 * ms, 2000 * ms}
	if len(*sleeps) != len(want) {
		t.Fatalf("sleeps %v, want %v", *sleeps, want)
	}
	for i := range want {
		if (*sleeps)[i] != want[i] {
			t.Fatalf("sleeps %v, want %v", *sleeps, want)
		}
	}
}

func TestReadyFirstPollNeedsNoSleep(t *testing.T) {
	sleeps := recordSleeps(t)
	ready, _, err := pollUntil(context.Background(), time.Now().Add(time.Minute), func(context.Context) (bool, string, error) {
		return true, "", nil
	})
	if err != nil || !ready || len(*sleeps) != 0 {
		t.Fatalf("ready %v, err %v, sleeps %v", ready, err, *sleeps)
	}
}

func TestReadySleepsNeverPastTheDeadline(t *testing.T) {
	sleeps := recordSleeps(t)
	deadline := time.Now().Add(150 * time.Millisecond)
	var timeouts []time.Duration
	polls := 0
	ready, last, err := pollUntil(context.Background(), deadline, func(ctx context.Context) (bool, string, error) {
		polls++
		dl, _ := ctx.Deadline()
		timeouts = append(timeouts, time.Until(dl))
		if polls == 2 {
			// The time runs out while the second poll waits for Core.
			time.Sleep(time.Until(deadline))
		}
		return false, "connected but provider not ready", nil
	})
	if err != nil || ready || last != "connected but provider not ready" {
		t.Fatalf("ready %v, last %q, err %v", ready, last, err)
	}
	if polls != 2 {
		t.Fatalf("%d polls, want 2", polls)
	}
	for _, d := range *sleeps {
		if d > 150*time.Millisecond {
			t.Fatalf("a sleep of %v past the 150 ms left", d)
		}
	}
	for _, d := range timeouts {
		if d > 150*time.Millisecond {
			t.Fatalf("a poll timeout of %v past the 150 ms left", d)
		}
	}
}

func TestReadyStopsOnAPollError(t *testing.T) {
	recordSleeps(t)
	refused := errors.New("Core refused the node's identity read (HTTP 401)")
	polls := 0
	_, _, err := pollUntil(context.Background(), time.Now().Add(time.Minute), func(context.Context) (bool, string, error) {
		polls++
		if polls == 3 {
			return false, "", refused
		}
		return false, "not yet", nil
	})
	if !errors.Is(err, refused) || polls != 3 {
		t.Fatalf("err %v after %d polls", err, polls)
	}
}

func TestReadyEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := pollUntil(ctx, time.Now().Add(time.Minute), func(context.Context) (bool, string, error) {
		return false, "not yet", nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}
