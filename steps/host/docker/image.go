package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"
)

// LoadTimeout is how long the installer lets an image load run
// (`docker load`, 1800 s in the original installer); ImageLoad puts it on
// its call.
const LoadTimeout = 30 * time.Minute

// ImageInspect returns the local image ID and platform of the image ref
// names (an image ID or digest such as sha256:<hex>). An image the engine
// does not hold is an error wrapping ErrNotFound. It implements
// steps/record/image.Inspector.
func (c *Client) ImageInspect(ctx context.Context, ref string) (id, os, arch string, err error) {
	var res client.ImageInspectResult
	err = c.call(ctx, "inspect image "+ref, func(ctx context.Context) (err error) {
		res, err = c.api.ImageInspect(ctx, ref)
		return err
	})
	if err != nil {
		return "", "", "", err
	}
	return res.ID, res.Os, res.Architecture, nil
}

// ImageLoad loads the image archive at tarPath into the engine, like
// `docker load --quiet --input tarPath`, and waits until the engine has
// finished. A failure the engine reports in its progress stream is an
// error naming the archive. tarPath is opened without following a final
// symbolic link. Whether the expected image is now present is for the
// caller to check (steps/record/image.Resolve).
func (c *Client) ImageLoad(ctx context.Context, tarPath string) error {
	f, err := os.OpenFile(tarPath, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("load image %s: %w", tarPath, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("load image %s: not a regular file", tarPath)
	}
	return c.ImageLoadReader(ctx, f, tarPath)
}

// ImageLoadReader loads the image archive r streams into the engine, like
// `docker load --quiet`; r may be gzip-compressed (the engine detects and
// decompresses it, as docker load -i runtime.tar.gz does). name says what
// r is in errors. A read error of r fails the load. Like ImageLoad it
// waits until the engine has finished and reports a failure from its
// progress stream.
//
// While the load runs, the engine is pinged every LoadStallTimeout/4 on
// a connection of its own: an engine that answers no ping for
// LoadStallTimeout (stopped with SIGSTOP, hung) fails the load with
// ErrNoAnswer then, instead of at LoadTimeout. A busy engine still answers
// its pings, so a long load of a large image is not cut short.
func (c *Client) ImageLoadReader(ctx context.Context, r io.Reader, name string) error {
	op := "load image " + name
	return c.callWithin(ctx, LoadTimeout, op, func(ctx context.Context) error {
		wctx, stop := c.watchdog(ctx, LoadStallTimeout)
		defer stop()
		err := func() error {
			res, err := c.api.ImageLoad(wctx, r, client.ImageLoadWithQuiet(true))
			if err != nil {
				return err
			}
			defer res.Close()
			return loadOutcome(res)
		}()
		if err != nil && ctx.Err() == nil {
			if cause := context.Cause(wctx); errors.Is(cause, ErrNoAnswer) {
				return cause
			}
			if isNoSpace(err) {
				return fmt.Errorf("%w; %s", err, adviceNoSpace)
			}
		}
		return err
	})
}

// LoadStallTimeout is how long an image load waits for the engine to
// answer a ping before it gives up on an engine that no longer answers.
var LoadStallTimeout = 2 * time.Minute

// watchdog returns a context of ctx that the engine's silence cancels:
// every stall/4 it pings the engine, and a ping unanswered for stall ends
// the context with an error wrapping ErrNoAnswer as its cause. stop ends
// the watch.
func (c *Client) watchdog(ctx context.Context, stall time.Duration) (context.Context, func()) {
	wctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(stall / 4)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			// The ping's status is its own, not the load's.
			var status int
			pctx, pcancel := context.WithTimeout(context.WithValue(wctx, statusKey{}, &status), stall)
			_, err := c.api.Ping(pctx, client.PingOptions{})
			late := err != nil && pctx.Err() == context.DeadlineExceeded && wctx.Err() == nil
			pcancel()
			if late {
				cancel(fmt.Errorf("%w: it answered no ping for %s while it loaded the image; the engine keeps no half-loaded image, so once it answers again (`docker info`), rerun the same command", ErrNoAnswer, stall))
				return
			}
		}
	}()
	return wctx, func() { close(done); cancel(nil) }
}

// adviceNoSpace is what the operator does when the engine ran out of
// space during a load.
const adviceNoSpace = "the Docker Engine's disk is full: free space where it keeps its data (`docker info --format '{{.DockerRootDir}}'`, `docker system df`), then rerun the same command (the engine keeps no half-loaded image)"

// isNoSpace reports whether a failed load ran out of space in the engine
// (ENOSPC, as the daemon words it).
func isNoSpace(err error) bool {
	return strings.Contains(err.Error(), "no space left on device")
}

// loadMessage is one line of the engine's JSON progress stream.
type loadMessage struct {
	Stream      string `json:"stream"`
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// loadOutcome reads the progress stream to its end and returns the first
// error the engine reported in it.
func loadOutcome(r io.Reader) error {
	dec := json.NewDecoder(r)
	var first error
	for {
		var m loadMessage
		err := dec.Decode(&m)
		if err == io.EOF {
			return first
		}
		if err != nil {
			if first != nil {
				return first
			}
			return fmt.Errorf("read the engine's answer: %w", err)
		}
		msg := m.Error
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			msg = m.ErrorDetail.Message
		}
		if msg != "" && first == nil {
			first = errors.New("the engine refused it: " + sanitize(msg))
		}
	}
}

// sanitize keeps an engine message to one printable line of bounded length.
func sanitize(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
