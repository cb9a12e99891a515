package ident

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// OriginReason is what makes a string not an origin, in the order
// ParseOrigin checks.
type OriginReason int

const (
	// OriginNotHTTP: it does not parse, its scheme is not http or https,
	// or it names no host.
	OriginNotHTTP OriginReason = iota + 1
	// OriginCredentials: it holds user information.
	OriginCredentials
	// OriginPath: it has a path other than "/", a query, a fragment or an
	// opaque part.
	OriginPath
	// OriginCharacters: it holds a space, tab, line break, '?', '#' or
	// backslash.
	OriginCharacters
)

// OriginError is ParseOrigin's refusal. URL is the parsed string when the
// reason comes after parsing (OriginCredentials and later), so that a
// caller with a rule of its own about the host can order its messages.
type OriginError struct {
	Origin string
	Reason OriginReason
	URL    *url.URL
}

func (e *OriginError) Error() string {
	switch e.Reason {
	case OriginNotHTTP:
		return fmt.Sprintf("%q is not an http(s) origin", e.Origin)
	case OriginCredentials:
		return fmt.Sprintf("%q is not an origin (credentials)", e.Origin)
	case OriginCharacters:
		return fmt.Sprintf("%q is not an origin (white space, '?', '#' or backslash)", e.Origin)
	}
	return fmt.Sprintf("%q is not an origin (path, query or fragment)", e.Origin)
}

// ParseOrigin is the installer's one origin rule: raw parses as a URL with
// the scheme http or https and a host, without credentials, query,
// fragment or a path other than "/", and holds none of " \t\r\n?#\\".
// Callers that refuse more (a trailing "/", other characters, a host that
// is not a DNS name or an IP address) check that on the URL it returns.
// Its error is an *OriginError.
func ParseOrigin(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, &OriginError{Origin: raw, Reason: OriginNotHTTP}
	}
	fail := func(r OriginReason) (*url.URL, error) { return nil, &OriginError{Origin: raw, Reason: r, URL: u} }
	switch {
	case u.User != nil:
		return fail(OriginCredentials)
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return fail(OriginPath)
	case strings.ContainsAny(raw, " \t\r\n\\?#"):
		return fail(OriginCharacters)
	}
	return u, nil
}

// IsLoopbackHost reports whether host (as url.URL.Hostname returns it) is
// localhost, in any case, or a loopback IP address.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// PlainHTTPToRemote reports whether u is plain http to a host that is not
// loopback: what only --allow-insecure-origin permits.
func PlainHTTPToRemote(u *url.URL) bool {
	return strings.EqualFold(u.Scheme, "http") && !IsLoopbackHost(u.Hostname())
}
