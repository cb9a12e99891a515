package privsep

import (
	"sort"
	"strings"
)

// AccountName is the service account every child runs as.
const AccountName = "oac-node"

// DockerConfigDir is the empty root-owned Docker client configuration
// directory the child uses, so that no credential helper or configuration of
// another account is ever read.
const DockerConfigDir = "/run/oac-node-docker"

// childPath is the child's PATH, the same fixed list the installer sets for
// itself at start.
const childPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// proxyPairs are the six proxy variables, lowercase spelling first.
var proxyPairs = [...][2]string{
	{"http_proxy", "HTTP_PROXY"},
	{"https_proxy", "HTTPS_PROXY"},
	{"no_proxy", "NO_PROXY"},
}

// ProxyEnv is a snapshot of the six proxy variables (http_proxy,
// https_proxy, no_proxy and their uppercase spellings) as they were set,
// keyed by name; a variable set to the empty string is present with an empty
// value. Its values may hold credentials: String prints names only.
type ProxyEnv map[string]string

// ProxyFromEnviron takes the proxy variables out of an environment in
// os.Environ form. Every other variable is ignored.
func ProxyFromEnviron(environ []string) ProxyEnv {
	p := ProxyEnv{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		for _, pair := range proxyPairs {
			if name == pair[0] || name == pair[1] {
				p[name] = value
			}
		}
	}
	return p
}

// Normalized returns the proxy variables the child gets, in os.Environ form
// and a fixed order: for each of the three, both spellings carry the
// lowercase value when the lowercase one is set (even to the empty string),
// else the uppercase value when that is set; a pair with neither set is
// left out. This is the rule the generated bootstrap command applies, so
// curl, Go and every tool the child runs agree.
func (p ProxyEnv) Normalized() []string {
	var env []string
	for _, pair := range proxyPairs {
		value, ok := p[pair[0]]
		if !ok {
			value, ok = p[pair[1]]
		}
		if ok {
			env = append(env, pair[0]+"="+value, pair[1]+"="+value)
		}
	}
	return env
}

// String names the variables that are set, never their values.
func (p ProxyEnv) String() string {
	names := make([]string, 0, len(p))
	for name := range p {
		names = append(names, name)
	}
	sort.Strings(names)
	return "proxy variables [" + strings.Join(names, " ") + "]"
}

// GoString is String, so that %#v does not print values either.
func (p ProxyEnv) GoString() string { return p.String() }

// ChildEnv is the complete environment of a child whose home is home:
// HOME, USER, LOGNAME, PATH, LANG and DOCKER_CONFIG with fixed values, then
// the normalized proxy variables. Nothing else of the parent's environment
// reaches the child.
func ChildEnv(home string, proxy ProxyEnv) []string {
	env := []string{
		"HOME=" + home,
		"USER=" + AccountName,
		"LOGNAME=" + AccountName,
		"PATH=" + childPath,
		"LANG=C.UTF-8",
		"DOCKER_CONFIG=" + DockerConfigDir,
	}
	return append(env, proxy.Normalized()...)
}
