package downloadtest

import (
	"io"
	"net"
	"net/http"
	"sync"
)

// Proxy is an HTTP proxy for tests: CONNECT tunnels for HTTPS and
// forwarding for plain HTTP, with optional basic authentication. It records
// every request it was asked.
type Proxy struct {
	Auth     string // expected Proxy-Authorization, "" for none
	Deny     bool   // answer 407 to everything
	mu       sync.Mutex
	connects []string
	auths    []string
}

// ServeHTTP records the request, then refuses, tunnels or forwards it.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.connects = append(p.connects, r.Method+" "+r.Host)
	p.auths = append(p.auths, r.Header.Get("Proxy-Authorization"))
	p.mu.Unlock()
	if p.Deny || (p.Auth != "" && r.Header.Get("Proxy-Authorization") != p.Auth) {
		w.Header().Set("Proxy-Authenticate", `Basic realm="test"`)
		w.WriteHeader(http.StatusProxyAuthRequired)
		return
	}
	if r.Method != http.MethodConnect {
		r.RequestURI = ""
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
		return
	}
	dst, err := net.Dial("tcp", r.Host)
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	src, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		dst.Close()
		return
	}
	brw.WriteString("HTTP/1.1 200 Connection established\r\n\r\n")
	brw.Flush()
	go func() { io.Copy(dst, brw); dst.Close() }()
	io.Copy(src, dst)
	src.Close()
}

// Seen returns, in order, each request's method and host ("CONNECT
// host:port" for a tunnel) and its Proxy-Authorization header.
func (p *Proxy) Seen() (requests, auths []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.connects...), append([]string(nil), p.auths...)
}
