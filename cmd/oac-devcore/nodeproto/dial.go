package nodeproto

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// DialURL connects to an https:// (or http://) URL and opens a WebSocket
// on it with the extra headers. tc configures TLS (its ServerName is set
// from the URL when empty). A refused upgrade returns the HTTP response.
func DialURL(ctx context.Context, rawURL string, header http.Header, tc *tls.Config) (*Conn, *http.Response, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, nil, fmt.Errorf("websocket dial %q: not an http(s) URL", rawURL)
	}
	addr := u.Host
	if u.Port() == "" {
		port := "443"
		if u.Scheme == "http" {
			port = "80"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	d := net.Dialer{Timeout: 15 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("websocket dial %s: %w", u.Host, err)
	}
	if u.Scheme == "https" {
		tc = tc.Clone()
		if tc == nil {
			tc = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		if tc.ServerName == "" {
			tc.ServerName = u.Hostname()
		}
		tc.NextProtos = []string{"http/1.1"}
		tlsConn := tls.Client(conn, tc)
		if err := tlsConn.HandshakeContext(ctx); err != nil {
			conn.Close()
			return nil, nil, fmt.Errorf("websocket dial %s: %w", u.Host, err)
		}
		conn = tlsConn
	}
	// The handshake is bounded by ctx's deadline, or 30 s.
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	conn.SetDeadline(deadline)
	ws, resp, err := Dial(conn, u.Host, u.RequestURI(), header)
	if err != nil {
		conn.Close()
		return nil, resp, err
	}
	conn.SetDeadline(time.Time{})
	return ws, resp, nil
}
