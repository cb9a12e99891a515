package download

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// Request describes one artifact download.
type Request struct {
	// URL is where the artifact is served (HTTPS; HTTP only for a console
	// the operator allowed). Redirects are followed to HTTPS URLs only.
	URL string
	// Target is the path the verified bytes are published at. Its
	// directory must exist; the part file is created beside it.
	Target string
	// Size and SHA256 (64 lowercase hex) are the declared identity.
	Size   int64
	SHA256 string
	// Mode is the target's mode: 0700 for native executables, 0600
	// otherwise.
	Mode os.FileMode
	// Header holds extra headers for the first request only; after a
	// redirect only Range and If-Range are sent.
	Header http.Header
	// Progress, when set, is called with the bytes held and the total as
	// they grow, from the downloading goroutine; it must return quickly.
	Progress func(done, total int64)
}

// Stats tells what a download did.
type Stats struct {
	Reused   bool  // the target already held the verified bytes
	Kept     int64 // bytes of an earlier part the first request resumed from
	Received int64 // response body bytes received
	Requests int   // HTTP requests sent, retries and restarts included
	Restarts int   // times the part was emptied to start from byte 0
}

// Receive buffers: large reads keep system calls and hash calls few on
// multi-hundred-MiB transfers, and several let the network run ahead of
// the disk.
const (
	bufSize  = 1 << 20
	bufCount = 8
)

// Download publishes the verified artifact at req.Target; see
// DownloadStats.
func (c *Client) Download(ctx context.Context, req Request) error {
	_, err := c.DownloadStats(ctx, req)
	return err
}

// DownloadStats publishes the artifact at req.Target and tells what it
// took. A target that already verifies is reused; one that does not is
// refused with a *ConflictError (ErrTargetConflict) and left alone. Bytes
// arrive in the part file, resuming one left by an earlier run; once size
// and sha256 match they are chmod'ed, fsynced and renamed to the target
// and the directory is fsynced. On return the target is absent or holds
// the verified bytes, never anything else. A stall or an interruption
// keeps the part for the next call; a size or checksum mismatch removes
// it. Network failures are *TransferError; cancellation of ctx is
// returned wrapped, keeping the part.
func (c *Client) DownloadStats(ctx context.Context, req Request) (Stats, error) {
	st, err := c.download(ctx, req)
	return st, scrub(err, c.secrets)
}

func (c *Client) download(ctx context.Context, req Request) (Stats, error) {
	var st Stats
	want, err := req.check()
	if err != nil {
		return st, err
	}
	name := filepath.Base(req.Target)
	bufs := make([][]byte, bufCount)
	for i := range bufs {
		bufs[i] = make([]byte, bufSize)
	}
	buf := bufs[0] // for reading local files, never while a spool runs

	switch err := verifyTarget(req.Target, req.Size, want, req.Mode, buf); {
	case err == nil:
		st.Reused = true
		// A crash after the rename may have left the validator behind.
		removeQuietly(PartPath(req.Target), ValidatorPath(req.Target))
		req.progress(req.Size)
		return st, nil
	case !errors.Is(err, fs.ErrNotExist):
		return st, err
	}

	p, err := openPart(req.Target)
	if err != nil {
		return st, err
	}
	defer p.close()
	if p.size > req.Size {
		if err := p.reset(); err != nil {
			return st, err
		}
	}
	if err := p.rehash(buf); err != nil {
		return st, err
	}
	st.Kept = p.size
	if p.size == req.Size && p.sum() != want {
		// Complete but wrong (or from another file): start over.
		st.Restarts++
		if err := p.reset(); err != nil {
			return st, err
		}
	}
	req.progress(p.size)

	restarts := 1 // one restart (416, misplaced Content-Range) per call
	for attempt := 0; p.size < req.Size; {
		if attempt > 0 {
			if err := Sleep(ctx, c.sleeps[attempt-1]); err != nil {
				return st, fmt.Errorf("download %s: %w; the %s received so far are kept", name, err, sizeText(p.size))
			}
		}
		st.Requests++
		err := c.transfer(ctx, req, p, bufs, &st)
		if err == nil {
			continue
		}
		var le local
		if errors.As(err, &le) {
			return st, le.err
		}
		if ctx.Err() != nil {
			return st, fmt.Errorf("download %s: %w; the %s received so far are kept", name, ctx.Err(), sizeText(p.size))
		}
		var rs restartSignal
		if errors.As(err, &rs) && restarts > 0 {
			restarts--
			st.Restarts++
			if err := p.reset(); err != nil {
				return st, err
			}
			continue
		}
		if errors.Is(err, ErrSize) {
			err = errors.Join(err, p.discard())
		}
		if errors.Is(err, ErrStalled) {
			return st, &TransferError{Op: "download", File: name, Err: fmt.Errorf(
				"%w: less than %s arrived in %s; the %s received so far are kept in %s; rerun the same command to resume",
				ErrStalled, sizeText(c.stallBytes), durationText(c.stallWindow), sizeText(p.size), p.path)}
		}
		attempt++
		if !isRetryable(err) || attempt > len(c.sleeps) {
			return st, &TransferError{Op: "download", File: name, Err: unwrapRetryable(err)}
		}
	}

	if got := p.sum(); got != want {
		derr := p.discard()
		return st, errors.Join(&TransferError{Op: "download", File: name, Err: fmt.Errorf(
			"%w: expected sha256 %s, received %s; the downloaded bytes were discarded", ErrChecksum, want, got)}, derr)
	}
	return st, p.publish(req.Target, req.Mode, want, buf)
}

// local marks a failure of this host (disk, permissions) during a
// transfer: it ends the download as it is and is no transfer error.
type local struct{ err error }

func (l local) Error() string { return l.err.Error() }
func (l local) Unwrap() error { return l.err }

// restartSignal asks for an empty part and a request from byte 0.
type restartSignal struct{ reason string }

func (r restartSignal) Error() string { return r.reason }

// transfer sends one request and appends its body to the part. It returns
// nil when the part grew to req.Size.
func (c *Client) transfer(ctx context.Context, req Request, p *part, bufs [][]byte, st *Stats) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var received atomic.Int64
	defer watchStall(cancel, &received, c.stallWindow, c.stallBytes)()

	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL, nil)
	if err != nil {
		return local{err}
	}
	for k, v := range req.Header {
		hreq.Header[k] = v
	}
	hreq.Header.Set("User-Agent", c.userAgent)
	if p.size > 0 {
		hreq.Header.Set("Range", "bytes="+strconv.FormatInt(p.size, 10)+"-")
		if p.validator != "" {
			hreq.Header.Set("If-Range", p.validator)
		}
	}
	resp, err := c.artifact.Do(hreq)
	if err != nil {
		return stallCause(ctx, transportFailure(err))
	}
	defer resp.Body.Close()
	where := displayURL(resp.Request.URL)

	switch code := resp.StatusCode; {
	case code == http.StatusOK:
		if resp.ContentLength >= 0 && resp.ContentLength != req.Size {
			return fmt.Errorf("%w: %s serves %d bytes, the release declares %d", ErrSize, where, resp.ContentLength, req.Size)
		}
		if p.size > 0 {
			// The server sent the whole file instead of the rest: use it.
			st.Restarts++
			if err := p.reset(); err != nil {
				return local{err}
			}
		}
		if err := p.saveValidator(validatorOf(resp)); err != nil {
			return local{err}
		}
	case code == http.StatusPartialContent:
		start, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if ok && total >= 0 && total != req.Size {
			return fmt.Errorf("%w: %s serves %d bytes, the release declares %d", ErrSize, where, total, req.Size)
		}
		if !ok || start != p.size {
			return restartSignal{fmt.Sprintf("%s answered with a range that does not start at byte %d", where, p.size)}
		}
		if p.size == 0 {
			if err := p.saveValidator(validatorOf(resp)); err != nil {
				return local{err}
			}
		}
	case code == http.StatusRequestedRangeNotSatisfiable:
		return restartSignal{fmt.Sprintf("%s cannot resume at byte %d (HTTP 416)", where, p.size)}
	case RetryableStatus(code):
		return retryable{&StatusError{Code: code, URL: where}}
	default:
		return &StatusError{Code: code, URL: where}
	}

	// One pass: every chunk is hashed as it arrives and written by the
	// spool. Reading one byte beyond the declared size detects a longer
	// file.
	body := io.LimitReader(resp.Body, req.Size-p.size+1)
	sp := startSpool(p, bufs)
	err = c.receive(body, req, p, sp, &received, st, where)
	if werr := sp.finish(); werr != nil {
		return local{werr}
	}
	if err != nil {
		return stallCause(ctx, err)
	}
	if p.size < req.Size {
		return retryable{fmt.Errorf("receive from %s: %w after %d of %d bytes", where, io.ErrUnexpectedEOF, p.size, req.Size)}
	}
	return nil
}

// receive hashes the body into p and hands it to the spool until the body
// ends.
func (c *Client) receive(body io.Reader, req Request, p *part, sp *spool, received *atomic.Int64, st *Stats, where string) error {
	for {
		buf, err := sp.buffer()
		if err != nil {
			return local{err}
		}
		n, rerr := fill(body, buf, received, st)
		if n > 0 {
			if p.size+int64(n) > req.Size {
				sp.release(buf)
				return fmt.Errorf("%w: %s serves more than the declared %d bytes", ErrSize, where, req.Size)
			}
			p.hash.Write(buf[:n])
			sp.write(buf[:n], p.size)
			p.size += int64(n)
			req.progress(p.size)
		} else {
			sp.release(buf)
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return retryable{fmt.Errorf("receive from %s: %w", where, rerr)}
		}
	}
}

// fill reads into buf until it is full, the body ends or fails.
func fill(r io.Reader, buf []byte, received *atomic.Int64, st *Stats) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		received.Add(int64(m))
		st.Received += int64(m)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// stallCause turns a failure caused by the stall watchdog into ErrStalled.
func stallCause(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), ErrStalled) {
		return ErrStalled
	}
	return err
}

// publish makes the verified part the target: chmod, fsync, close, rename
// without replacing anything, fsync the directory (safefile.Pending), then
// remove the validator. A target published meanwhile is accepted only if
// it verifies (and is then made durable, see verifyTarget).
func (p *part) publish(target string, mode os.FileMode, want string, buf []byte) error {
	err := p.pending.Commit(filepath.Base(target), mode)
	p.f = nil
	if errors.Is(err, fs.ErrExist) {
		// Published meanwhile: equal bytes are success, others refused.
		if verr := verifyTarget(target, p.size, want, mode, buf); verr != nil {
			return verr
		}
		err = p.pending.Discard()
	}
	p.pending = nil
	if err != nil {
		return fmt.Errorf("publish %s: %w", target, err)
	}
	if err := p.root.Remove(filepath.Base(p.valPath)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// verifyTarget checks an existing target without following links: nil when
// it holds size bytes with sha256 want (its mode is then set to mode, and
// it and its directory are fsynced), fs.ErrNotExist when absent, a
// *ConflictError when it differs.
func verifyTarget(target string, size int64, want string, mode os.FileMode, buf []byte) error {
	f, err := os.OpenFile(target, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return &ConflictError{Path: target, Reason: "is a symbolic link"}
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return fmt.Errorf("check %s: %w", target, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("check %s: %w", target, err)
	}
	if !fi.Mode().IsRegular() {
		return &ConflictError{Path: target, Reason: "is not a regular file"}
	}
	if fi.Size() != size {
		return &ConflictError{Path: target, Reason: fmt.Sprintf("holds %d bytes, not the declared %d", fi.Size(), size)}
	}
	h := sha256.New()
	if _, err := io.CopyBuffer(h, onlyReader{f}, buf); err != nil {
		return fmt.Errorf("check %s: %w", target, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return &ConflictError{Path: target, Reason: "does not match its declared sha256"}
	}
	if fi.Mode().Perm() != mode {
		if err := f.Chmod(mode); err != nil {
			return fmt.Errorf("set mode of %s: %w", target, err)
		}
	}
	// Already there: the run that published it may have died before its
	// directory fsync. Make the file and its name durable before success.
	if err := safefile.Sync(f); err != nil {
		return fmt.Errorf("sync %s: %w", target, err)
	}
	return safefile.SyncDir(filepath.Dir(target))
}

// check validates the request and returns the wanted hex digest.
func (r *Request) check() (string, error) {
	u, err := url.Parse(r.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return "", fmt.Errorf("download %s: %s is not a usable HTTP(S) URL", filepath.Base(r.Target), displayURLString(r.URL))
	}
	if r.Target == "" || !filepath.IsAbs(r.Target) {
		return "", fmt.Errorf("download: target %q is not an absolute path", r.Target)
	}
	if r.Size < 0 {
		return "", fmt.Errorf("download %s: negative size %d", filepath.Base(r.Target), r.Size)
	}
	want := strings.ToLower(r.SHA256)
	if b, err := hex.DecodeString(want); err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("download %s: %q is not a sha256 digest", filepath.Base(r.Target), r.SHA256)
	}
	if r.Mode&^os.ModePerm != 0 || r.Mode&0o077 != 0 || r.Mode&0o600 != 0o600 {
		return "", fmt.Errorf("download %s: mode %#o is not private", filepath.Base(r.Target), r.Mode)
	}
	return want, nil
}

func (r *Request) progress(done int64) {
	if r.Progress != nil {
		r.Progress(done, r.Size)
	}
}

// validatorOf is the strong validator to resume against: the ETag, else
// Last-Modified.
func validatorOf(resp *http.Response) string {
	if v := resp.Header.Get("ETag"); v != "" {
		return v
	}
	return resp.Header.Get("Last-Modified")
}

// parseContentRange parses "bytes <start>-<end>/<total|*>"; total is -1
// for "*".
func parseContentRange(v string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	s, e, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err1 := strconv.ParseInt(s, 10, 64)
	end, err2 := strconv.ParseInt(e, 10, 64)
	if err1 != nil || err2 != nil || start < 0 || end < start {
		return 0, 0, false
	}
	total = -1
	if tot != "*" {
		t, err := strconv.ParseInt(tot, 10, 64)
		if err != nil || t <= end {
			return 0, 0, false
		}
		total = t
	}
	return start, total, true
}

func removeQuietly(paths ...string) {
	for _, p := range paths {
		os.Remove(p)
	}
}

// sizeText renders a byte count for operators.
func sizeText(n int64) string {
	switch {
	case n >= 10<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 10<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// durationText renders a window for operators: "60 s" rather than "1m0s".
func durationText(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%d s", d/time.Second)
	}
	return d.String()
}
