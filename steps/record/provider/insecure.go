package provider

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

// ErrInsecureOrigin: an origin uses plain http to a host that is not
// loopback while the insecure-origin policy (--allow-insecure-origin,
// recorded as allow_insecure_origin) does not allow it (CONTRACT §4.4).
var ErrInsecureOrigin = errors.New("plain http to a host that is not loopback; use https, or install the node with --allow-insecure-origin")

// CheckOriginPolicy refuses an origin that the insecure-origin policy does
// not allow: plain http is allowed to a loopback host, and to any host only
// when allowInsecure. It does not check the origin's form (CheckOrigin).
func CheckOriginPolicy(origin string, allowInsecure bool) error {
	u, err := url.Parse(origin)
	if err != nil {
		return fmt.Errorf("origin %q: %w", origin, err)
	}
	if !allowInsecure && ident.PlainHTTPToRemote(u) {
		return fmt.Errorf("%s: %w", origin, ErrInsecureOrigin)
	}
	return nil
}
