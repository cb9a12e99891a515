package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
)

// maxAnswer bounds Core's answers.
const maxAnswer = 16384

// coreClient talks to Core's machine routes. Secrets go only into the
// Authorization header; redirects are never followed.
type coreClient struct {
	origin string
	tls    *tls.Config
	http   *http.Client
}

// coreError is Core's refusal: an HTTP status and the error code of the
// body {"error":{"code":…}}, when there is one.
type coreError struct {
	Status int
	Code   string
}

func (e *coreError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("Core answered HTTP %d", e.Status)
	}
	return fmt.Sprintf("Core answered HTTP %d %s", e.Status, e.Code)
}

// checkOrigin accepts an http(s) origin (provider.CheckOrigin); plain
// http only for a loopback host unless insecure is allowed.
func checkOrigin(origin string, insecure bool) error {
	u, err := provider.CheckOrigin(origin)
	if err != nil {
		return err
	}
	if !insecure && ident.PlainHTTPToRemote(u) {
		return fmt.Errorf("%s uses plain http to a host that is not loopback; use https or --allow-insecure-origin", origin)
	}
	return nil
}

// readCA reads a PEM bundle and returns its pool and sha256.
func readCA(path string) (*x509.CertPool, string, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("read the Core CA %s: %w", path, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, "", fmt.Errorf("the Core CA %s holds no PEM certificate", path)
	}
	sum := sha256.Sum256(pem)
	return pool, hex.EncodeToString(sum[:]), nil
}

// newCoreClient returns a client of origin trusting roots (nil: the
// system roots), through the environment's proxy settings.
func newCoreClient(origin string, roots *x509.CertPool) *coreClient {
	tc := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSClientConfig:     tc,
		TLSHandshakeTimeout: 15 * time.Second,
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	return &coreClient{origin: origin, tls: tc, http: &http.Client{
		Transport:     tr,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// do sends a request with a bearer secret and decodes a 2xx answer into
// out strictly (no unknown field, nothing after it). A refusal is *coreError; a transport failure is returned as is
// (the request may or may not have reached Core).
func (c *coreClient) do(ctx context.Context, method, path, secret string, header http.Header, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.origin+path, rd)
	if err != nil {
		return err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "oac-node-dev")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may carry a query; keep the reason
		}
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		json.Unmarshal(data, &e)
		return &coreError{Status: resp.StatusCode, Code: e.Error.Code}
	}
	if len(data) > maxAnswer {
		return fmt.Errorf("%s %s: the answer is larger than %d bytes", method, path, maxAnswer)
	}
	if out != nil {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(out); err != nil {
			return fmt.Errorf("%w: %s %s: %v", errAnswer, method, path, err)
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: %s %s: data after the answer", errAnswer, method, path)
		}
	}
	return nil
}

// errAnswer: Core's 2xx answer is not the expected JSON object, decoded
// strictly as the platform's node program does ("invalid enrollment
// response").
var errAnswer = errors.New("invalid answer from Core")
