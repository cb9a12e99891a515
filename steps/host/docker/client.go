package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/moby/moby/client"
)

// DefaultHost is the engine address the node's provider configuration
// names (CONTRACT §3.1).
const DefaultHost = "unix:///var/run/docker.sock"

// Client talks to one Docker Engine. It is safe for concurrent use.
type Client struct {
	api    *client.Client
	socket string
}

// New returns a client of the engine at host, a unix:// address (""
// means DefaultHost). It does not contact the engine; the first call
// negotiates the API version. Environment variables (DOCKER_HOST and the
// like) are ignored: the installer talks to the engine its configuration
// names.
func New(host string) (*Client, error) {
	if host == "" {
		host = DefaultHost
	}
	socket, ok := strings.CutPrefix(host, "unix://")
	if !ok || !strings.HasPrefix(socket, "/") {
		return nil, fmt.Errorf("docker host %q: only unix:///absolute/path is supported", host)
	}
	c := &Client{socket: socket}
	api, err := client.New(
		client.WithHost(host),
		client.WithDialContext(c.dial),
		client.WithHTTPResponseHook(recordStatus),
		client.WithUserAgent("oac-node-install"),
	)
	if err != nil {
		return nil, fmt.Errorf("docker client for %s: %w", host, err)
	}
	c.api = api
	return c, nil
}

// Close releases idle connections.
func (c *Client) Close() error { return c.api.Close() }

// APIVersion is the API version in use: the negotiated one after the first
// call.
func (c *Client) APIVersion() string { return c.api.ClientVersion() }

// dialError classifies a failed connection to the socket. Its text avoids
// the phrases the Docker client rewrites into its own generic message, so
// the classification survives the client's wrapping.
type dialError struct {
	kind   error
	socket string
	reason string
}

func (e *dialError) Error() string {
	return fmt.Sprintf("%s: %s (%s)", e.kind, e.socket, e.reason)
}

func (e *dialError) Unwrap() error { return e.kind }

func (c *Client) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if err == nil {
		return conn, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, classifyDial(c.socket, err)
}

// classifyDial turns a failed connection to socket into a *dialError.
func classifyDial(socket string, err error) error {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return &dialError{ErrUnavailable, socket, "no such socket"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &dialError{ErrUnavailable, socket, "nothing accepts connections on it"}
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return &dialError{ErrPermission, socket, "this account may not use it"}
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ENOTSOCK):
		return &dialError{ErrUnavailable, socket, "not a socket"}
	}
	return &dialError{ErrUnavailable, socket, "cannot connect"}
}

// statusKey carries, per call, where the HTTP status of the engine's
// answer is recorded: the client's errors do not expose it otherwise.
type statusKey struct{}

func recordStatus(resp *http.Response) {
	if resp.Request == nil {
		return
	}
	if p, ok := resp.Request.Context().Value(statusKey{}).(*int); ok {
		*p = resp.StatusCode
	}
}

// CallTimeout bounds one call to the engine (info, inspect, network
// create and remove, containers by label); LoadTimeout bounds an image
// load, which streams the whole archive. A hung engine then fails the call
// with ErrNoAnswer instead of holding the command for as long as the
// operator waits.
var CallTimeout = 2 * time.Minute

// ErrNoAnswer means the engine accepted the connection but did not answer
// within the call's deadline.
var ErrNoAnswer = errors.New("the Docker Engine did not answer in time (check it with `sudo systemctl status docker`)")

// call runs f with a context that records the engine's HTTP status and
// ends after timeout, and translates a failure into this package's errors,
// naming op.
func (c *Client) call(ctx context.Context, op string, f func(ctx context.Context) error) error {
	return c.callWithin(ctx, CallTimeout, op, f)
}

func (c *Client) callWithin(ctx context.Context, timeout time.Duration, op string, f func(ctx context.Context) error) error {
	status := 0
	cctx, cancel := context.WithTimeout(context.WithValue(ctx, statusKey{}, &status), timeout)
	defer cancel()
	err := f(cctx)
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && cctx.Err() != nil {
		return fmt.Errorf("%s: %w (waited %s)", op, ErrNoAnswer, timeout)
	}
	return classify(op, status, err)
}

func classify(op string, status int, err error) error {
	var de *dialError
	switch {
	case errors.As(err, &de):
		return fmt.Errorf("%s: %w", op, de)
	case errors.Is(err, ErrNoAnswer):
		return fmt.Errorf("%s: %w", op, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", op, err)
	case status == http.StatusNotFound:
		return &apiError{op: op, kind: ErrNotFound, err: err}
	case status == http.StatusConflict:
		return &apiError{op: op, kind: ErrExists, err: err}
	case status == 0:
		// No answer at all: the connection broke (EOF, reset).
		return fmt.Errorf("%s: %w; the Docker Engine broke off the answer: check that it runs (systemctl status docker, docker info), then rerun the same command", op, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// apiError is an engine answer classified as kind; its text keeps the
// daemon's message.
type apiError struct {
	op   string
	kind error
	err  error
}

func (e *apiError) Error() string   { return e.op + ": " + e.err.Error() }
func (e *apiError) Unwrap() []error { return []error{e.kind, e.err} }
