package download

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// FetchMetadata reads a metadata file (manifest.json, SHA256SUMS, ...)
// into memory. limit caps the size; zero, a negative limit or one above
// MaxMetadata means MaxMetadata, and a larger file is refused with
// ErrTooLarge. Redirects are never followed: a redirect is an error naming
// the file. Transport errors, incomplete reads and HTTP 408, 429, 500, 502,
// 503 and 504 are retried (three attempts, 1 s then 2 s apart); any other
// status fails at once with a *StatusError, never echoing the body. Every
// such failure is a *TransferError; cancellation of ctx is returned as is.
func (c *Client) FetchMetadata(ctx context.Context, rawURL string, limit int64) ([]byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("fetch metadata: %q is not an HTTP(S) URL", displayURLString(rawURL))
	}
	if limit <= 0 || limit > MaxMetadata {
		limit = MaxMetadata
	}
	name := displayURL(u)
	var last error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if err := Sleep(ctx, c.sleeps[attempt-1]); err != nil {
				return nil, fmt.Errorf("fetch %s: %w", name, err)
			}
		}
		data, err := c.fetchOnce(ctx, u, limit)
		if err == nil {
			return data, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("fetch %s: %w", name, ctx.Err())
		}
		last = err
		if !isRetryable(err) || attempt >= len(c.sleeps) {
			break
		}
	}
	return nil, scrub(&TransferError{Op: "fetch", File: name, Err: unwrapRetryable(last)}, c.secrets)
}

func (c *Client) fetchOnce(ctx context.Context, u *url.URL, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.metadataTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.metadata.Do(req)
	if err != nil {
		return nil, transportFailure(err)
	}
	defer resp.Body.Close()
	switch code := resp.StatusCode; {
	case code == http.StatusOK:
	case code >= 300 && code < 400:
		return nil, fmt.Errorf("%w: metadata is read from the console itself, never through a redirect (HTTP %d)", ErrRedirect, code)
	case RetryableStatus(code):
		// No URL: the message names it already, and there is no redirect.
		return nil, retryable{&StatusError{Code: code}}
	default:
		return nil, &StatusError{Code: code}
	}
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("%w: %d bytes, more than the limit of %d", ErrTooLarge, resp.ContentLength, limit)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		// An incomplete read is worth another attempt.
		return nil, retryable{fmt.Errorf("read response: %w", err)}
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: more than the limit of %d bytes", ErrTooLarge, limit)
	}
	return data, nil
}

func unwrapRetryable(err error) error {
	if r, ok := err.(retryable); ok {
		return r.err
	}
	return err
}

// displayURLString shows a URL that may not parse, without credentials.
func displayURLString(s string) string {
	if u, err := url.Parse(s); err == nil {
		return displayURL(u)
	}
	return "(unparsable URL)"
}
