package core

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
)

// Proxy selects a request's proxy (nil: none); the installer has one proxy
// parser, steps/record/proxy.
type Proxy = func(*http.Request) (*url.URL, error)

// Client talks to one Core origin with one credential: a node's credential
// (NewNodeClient) or an enrollment token (NewTokenClient). It never follows
// a redirect and never puts the credential anywhere but the Authorization
// header.
type Client struct {
	origin     string
	nodeID     string // empty for a token client
	credential string
	token      bool
	sleeps     []time.Duration
	http       *http.Client
	transport  trust.RoundTripper
}

// NewNodeClient returns a client of origin for the node nodeID with its
// credential, trusting roots (nil: the system roots). It reads once, never
// retrying. The caller checked origin against the node's insecure-origin
// policy.
func NewNodeClient(origin, nodeID, credential string, roots *trust.Roots, proxy Proxy) *Client {
	return newClient(&Client{origin: origin, nodeID: nodeID, credential: credential}, roots, proxy)
}

// NewTokenClient returns a client of origin with an enrollment token,
// trusting roots (nil: the system roots). A configuration read that fails
// with a transport error, an incomplete read or a retryable status is
// tried again after each of sleeps (nil: 1 s, then 2 s).
func NewTokenClient(origin, token string, roots *trust.Roots, proxy Proxy, sleeps []time.Duration) *Client {
	if sleeps == nil {
		sleeps = []time.Duration{time.Second, 2 * time.Second}
	}
	return newClient(&Client{origin: origin, credential: token, token: true, sleeps: sleeps}, roots, proxy)
}

func newClient(c *Client, roots *trust.Roots, proxy Proxy) *Client {
	tr := &http.Transport{
		Proxy:               proxy,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 15 * time.Second,
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	c.transport = roots.Transport(tr)
	c.http = &http.Client{
		Transport:     c.transport,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c
}

// CloseIdleConnections closes the client's idle connections.
func (c *Client) CloseIdleConnections() { c.transport.CloseIdleConnections() }

// Configuration reads Core's configuration of generation with the node's
// credential and validates the answer in itself.
func (c *Client) Configuration(ctx context.Context, generation int64) (*Configuration, error) {
	body, err := c.ConfigurationAnswer(ctx, generation)
	if err != nil {
		return nil, err
	}
	return ParseConfiguration(body)
}

// ConfigurationAnswer GETs <origin>/api/v1/sandbox-node/configuration and
// returns Core's exact answer, at most MaxConfigurationSize bytes. A node
// client asks for generation (?generation=N) and sends X-OAC-Node-ID,
// Accept and User-Agent; a token client asks for the deployment's
// generation (generation is ignored) and sends the token only. A refusal
// is a *StatusError; a token client returns ctx.Err() itself when ctx
// ends.
func (c *Client) ConfigurationAnswer(ctx context.Context, generation int64) ([]byte, error) {
	u := c.origin + "/api/v1/sandbox-node/configuration"
	if !c.token {
		u += "?generation=" + strconv.FormatInt(generation, 10)
	}
	for attempt := 0; ; attempt++ {
		body, retry, err := c.configurationOnce(ctx, u)
		if err == nil || !retry || attempt >= len(c.sleeps) {
			return body, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(c.sleeps[attempt]):
		}
	}
}

// configurationOnce reads the configuration route once; retry reports
// whether another attempt may succeed. Its messages name the next step for
// the credential's holder: the operator typing a command (token), or the
// node's configuration reads (node credential).
func (c *Client) configurationOnce(ctx context.Context, u string) (body []byte, retry bool, err error) {
	failed := func(format string, args ...any) error {
		return fmt.Errorf("read configuration from Core %s: "+format, append([]any{c.origin}, args...)...)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		if c.token {
			return nil, false, err
		}
		return nil, false, failed("%w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.credential)
	if !c.token {
		req.Header.Set("X-OAC-Node-ID", c.nodeID)
		req.Header.Set("Accept", "application/json")
		req.Header.Set("User-Agent", "oac-node-install")
	}
	resp, err := c.http.Do(req)
	switch {
	case err != nil && ctx.Err() != nil && c.token:
		return nil, false, ctx.Err()
	case err != nil && ctx.Err() != nil:
		return nil, false, failed("%w", ctx.Err())
	case err != nil && c.token:
		return nil, true, fmt.Errorf("Core at %s cannot be reached (%s); check the address and that the reverse proxy routes /api/v1 to Core", c.origin, transportReason(err, true))
	case err != nil:
		return nil, true, failed("%v; check the Core origin and that the reverse proxy routes /api/v1 to Core", transportReason(err, false))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, MaxConfigurationSize))
		return nil, download.RetryableStatus(resp.StatusCode), &StatusError{Code: resp.StatusCode, Token: c.token}
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, MaxConfigurationSize+1))
	switch {
	case err != nil && c.token:
		return nil, true, fmt.Errorf("reading Core's answer: %s", transportReason(err, true))
	case err != nil:
		return nil, true, failed("%v", transportReason(err, false))
	case len(body) > MaxConfigurationSize && c.token:
		return nil, false, fmt.Errorf("Core's answer is larger than %d bytes", MaxConfigurationSize)
	case len(body) > MaxConfigurationSize:
		return nil, false, fmt.Errorf("%w: the answer is larger than %d bytes", ErrAnswer, MaxConfigurationSize)
	}
	return body, false, nil
}

// identityRequest is a GET of <origin>/api/v1/sandbox-node/identity for the
// client's node with its credential.
func (c *Client) identityRequest(ctx context.Context) (*http.Request, error) {
	u := c.origin + "/api/v1/sandbox-node/identity?node_id=" + url.QueryEscape(c.nodeID)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.credential)
	return req, nil
}

// Identity GETs Core's identity route for the client's node once, with the
// node credential, Accept and User-Agent (CONTRACT §2.3). The caller
// closes the answer's body. An error is a *RequestError when nothing was
// sent, else http.Client's.
func (c *Client) Identity(ctx context.Context) (*http.Response, error) {
	req, err := c.identityRequest(ctx)
	if err != nil {
		return nil, &RequestError{Err: err}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "oac-node-install")
	return c.http.Do(req)
}

// IdentityAnswer GETs Core's identity route for the client's node once,
// with the node credential only, and returns the status and, for 200, at
// most MaxConfigurationSize+1 bytes of the answer. A transport error is
// told by TransportReason.
func (c *Client) IdentityAnswer(ctx context.Context) (body []byte, status int, err error) {
	req, err := c.identityRequest(ctx)
	if err != nil {
		return nil, 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, errors.New(transportReason(err, false))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, nil
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, MaxConfigurationSize+1))
	if err != nil {
		return nil, 0, errors.New(transportReason(err, false))
	}
	return body, http.StatusOK, nil
}
