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
func (c *Client) ImageLoadReader(ctx context.Context, r io.Reader, name string) error {
	op := "load image " + name
	return c.callWithin(ctx, LoadTimeout, op, func(ctx context.Context) error {
		res, err := c.api.ImageLoad(ctx, r, client.ImageLoadWithQuiet(true))
		if err != nil {
			return err
		}
		defer res.Close()
		return loadOutcome(res)
	})
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
