package proxy

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// Selector is a parsed snapshot: it picks the proxy for one request URL.
type Selector struct {
	http, https *url.URL
	bypass      []noProxyRule
}

// Selector parses the snapshot. An unusable setting is refused with an
// error that names the variable, never its value, which may hold
// credentials.
func (e Env) Selector() (*Selector, error) {
	h, err := parseProxyURL(e.HTTP.Value, "http_proxy/HTTP_PROXY")
	if err != nil {
		return nil, err
	}
	hs, err := parseProxyURL(e.HTTPS.Value, "https_proxy/HTTPS_PROXY")
	if err != nil {
		return nil, err
	}
	return &Selector{http: h, https: hs, bypass: parseNoProxy(e.NoProxy.Value)}, nil
}

// ProxyFunc returns the Transport.Proxy function of the snapshot, for a
// client that keeps no list of secrets to scrub (Core's); its error is
// Selector's, prefixed with "proxy settings: ".
func (e Env) ProxyFunc() (func(*http.Request) (*url.URL, error), error) {
	sel, err := e.Selector()
	if err != nil {
		return nil, fmt.Errorf("proxy settings: %w", err)
	}
	return sel.Proxy, nil
}

// Secrets lists the strings that would reveal proxy credentials, for
// scrubbing them out of error messages: for each proxy URL with user
// information, the spellings a message may show it in, longest first.
func (s *Selector) Secrets() []string {
	var out []string
	for _, u := range []*url.URL{s.http, s.https} {
		if u == nil || u.User == nil {
			continue
		}
		name := u.User.Username()
		pass, _ := u.User.Password()
		// Longest first, so a replaced "user:pass" does not leave "pass".
		out = append(out, u.User.String(), name+":"+pass,
			url.QueryEscape(pass), url.PathEscape(pass), pass)
	}
	return out
}

// parseProxyURL parses the value of the variable pair name: nil for an
// empty value, a bare host[:port] taken as http://.
func parseProxyURL(v, name string) (*url.URL, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	if !strings.Contains(v, "://") {
		v = "http://" + v
	}
	u, err := url.Parse(v)
	if err != nil {
		// url.Parse quotes the input, credentials included: drop it.
		return nil, fmt.Errorf("%s is not a valid proxy URL", name)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%s uses scheme %q; use an http:// proxy URL", name, u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("%s names no proxy host", name)
	}
	return u, nil
}

// Proxy is the Transport.Proxy function: the proxy for r's scheme, or nil
// for none or when the no_proxy list bypasses r's host and port.
func (s *Selector) Proxy(r *http.Request) (*url.URL, error) {
	var p *url.URL
	switch r.URL.Scheme {
	case "https":
		p = s.https
	case "http":
		p = s.http
	}
	if p == nil {
		return nil, nil
	}
	port := r.URL.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[r.URL.Scheme]
	}
	if matchNoProxy(s.bypass, r.URL.Hostname(), port) {
		return nil, nil
	}
	return p, nil
}

// noProxyRule is one no_proxy entry.
type noProxyRule struct {
	all    bool
	prefix netip.Prefix // CIDR entry
	addr   netip.Addr   // IP entry
	domain string       // host or domain entry: it and its subdomains
	port   string       // "" for any port
}

// parseNoProxy splits at commas and white space; unusable entries are
// ignored, as curl and Python ignore them.
func parseNoProxy(v string) []noProxyRule {
	var rules []noProxyRule
	for _, e := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		if e == "*" {
			rules = append(rules, noProxyRule{all: true})
			continue
		}
		if p, err := netip.ParsePrefix(e); err == nil {
			rules = append(rules, noProxyRule{prefix: p.Masked()})
			continue
		}
		host, port := e, ""
		if h, p, err := net.SplitHostPort(e); err == nil {
			host, port = h, p
		} else if strings.HasPrefix(e, "[") && strings.HasSuffix(e, "]") {
			host = e[1 : len(e)-1]
		}
		if p, err := netip.ParsePrefix(host); err == nil {
			rules = append(rules, noProxyRule{prefix: p.Masked(), port: port})
			continue
		}
		if a, err := netip.ParseAddr(host); err == nil {
			rules = append(rules, noProxyRule{addr: a.Unmap().WithZone(""), port: port})
			continue
		}
		host = strings.TrimPrefix(host, "*")
		host = strings.Trim(host, ".")
		if host == "" {
			continue
		}
		rules = append(rules, noProxyRule{domain: host, port: port})
	}
	return rules
}

// matchNoProxy reports whether a request to host:port bypasses the proxy.
func matchNoProxy(rules []noProxyRule, host, port string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	addr, err := netip.ParseAddr(host)
	isIP := err == nil
	if isIP {
		addr = addr.Unmap().WithZone("")
	}
	for _, r := range rules {
		switch {
		case r.all:
			return true
		case r.port != "" && r.port != port:
			continue
		case r.prefix.IsValid():
			if isIP && r.prefix.Contains(addr) {
				return true
			}
		case r.addr.IsValid():
			if isIP && r.addr == addr {
				return true
			}
		case r.domain != "":
			if host == r.domain || strings.HasSuffix(host, "."+r.domain) {
				return true
			}
		}
	}
	return false
}
