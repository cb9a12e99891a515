package download

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// ProxyEnv is a snapshot of the proxy settings, already resolved from the
// six variables: each field holds the lowercase variable when it is set,
// even to the empty string, and the uppercase one otherwise. The zero
// value uses no proxy.
type ProxyEnv struct {
	HTTPProxy  string // http_proxy, else HTTP_PROXY
	HTTPSProxy string // https_proxy, else HTTPS_PROXY
	NoProxy    string // no_proxy, else NO_PROXY
}

// ProxyVariables are the six variable names a proxy snapshot reads, the
// only ones the installer passes through sudo and into its child.
var ProxyVariables = []string{"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"}

// ProxyEnvFromLookup resolves the snapshot with lookup (os.LookupEnv, or
// a test's map): a set lowercase variable wins even when empty.
func ProxyEnvFromLookup(lookup func(string) (string, bool)) ProxyEnv {
	get := func(lower, upper string) string {
		if v, ok := lookup(lower); ok {
			return v
		}
		v, _ := lookup(upper)
		return v
	}
	return ProxyEnv{
		HTTPProxy:  get("http_proxy", "HTTP_PROXY"),
		HTTPSProxy: get("https_proxy", "HTTPS_PROXY"),
		NoProxy:    get("no_proxy", "NO_PROXY"),
	}
}

// ProxyEnvFromEnviron resolves the snapshot from an environment list in
// os.Environ form; the first assignment of a name counts, as in getenv.
func ProxyEnvFromEnviron(environ []string) ProxyEnv {
	m := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, seen := m[k]; !seen {
			m[k] = v
		}
	}
	return ProxyEnvFromLookup(func(k string) (string, bool) { v, ok := m[k]; return v, ok })
}

// ProxyFunc returns the Transport.Proxy function of the snapshot, for a
// client other than Client (Core's): every client of the installer uses
// this one parser. An unusable setting is refused with an error that names
// the variable, never its value.
func (p ProxyEnv) ProxyFunc() (func(*http.Request) (*url.URL, error), error) {
	sel, err := newProxySelector(p)
	if err != nil {
		return nil, fmt.Errorf("proxy settings: %w", err)
	}
	return sel.proxy, nil
}

// proxySelector picks the proxy for one request URL.
type proxySelector struct {
	http, https *url.URL
	bypass      []noProxyRule
}

// newProxySelector parses the snapshot. Its errors never contain a
// variable's value, which may hold credentials.
func newProxySelector(p ProxyEnv) (*proxySelector, error) {
	h, err := parseProxyURL(p.HTTPProxy, "http_proxy/HTTP_PROXY")
	if err != nil {
		return nil, err
	}
	hs, err := parseProxyURL(p.HTTPSProxy, "https_proxy/HTTPS_PROXY")
	if err != nil {
		return nil, err
	}
	return &proxySelector{http: h, https: hs, bypass: parseNoProxy(p.NoProxy)}, nil
}

// secrets lists the strings that would reveal proxy credentials.
func (s *proxySelector) secrets() []string {
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

// proxy is the Transport.Proxy function.
func (s *proxySelector) proxy(r *http.Request) (*url.URL, error) {
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
