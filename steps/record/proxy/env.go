package proxy

import "strings"

// Variables are the six variable names a snapshot reads, the only ones the
// installer passes through sudo and into its child.
var Variables = []string{"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"}

// pairs are the three settings' variable names, lowercase spelling first.
var pairs = [...][2]string{
	{"http_proxy", "HTTP_PROXY"},
	{"https_proxy", "HTTPS_PROXY"},
	{"no_proxy", "NO_PROXY"},
}

// Setting is one resolved pair of variables: its value, and whether either
// spelling was set at all (a setting set to the empty string is Set with
// an empty Value).
type Setting struct {
	Value string
	Set   bool
}

// String tells whether the setting is set, never its value.
func (s Setting) String() string {
	switch {
	case !s.Set:
		return "unset"
	case s.Value == "":
		return "set empty"
	}
	return "set"
}

// GoString is String, so that %#v does not print the value either.
func (s Setting) GoString() string { return s.String() }

// Env is a proxy snapshot, resolved from the six variables (package doc).
// It is comparable; the zero Env has nothing set and uses no proxy.
type Env struct {
	HTTP    Setting // http_proxy, else HTTP_PROXY
	HTTPS   Setting // https_proxy, else HTTPS_PROXY
	NoProxy Setting // no_proxy, else NO_PROXY
}

// FromLookup resolves the snapshot with lookup (os.LookupEnv, or a test's
// map): a set lowercase variable wins even when empty.
func FromLookup(lookup func(string) (string, bool)) Env {
	var e Env
	for i, s := range e.settings() {
		if v, ok := lookup(pairs[i][0]); ok {
			*s = Setting{Value: v, Set: true}
		} else if v, ok := lookup(pairs[i][1]); ok {
			*s = Setting{Value: v, Set: true}
		}
	}
	return e
}

// FromEnviron resolves the snapshot from an environment list in os.Environ
// form; the first entry of a name counts, as in getenv. Entries without
// "=" and every other variable are ignored.
func FromEnviron(environ []string) Env {
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
	return FromLookup(func(k string) (string, bool) { v, ok := m[k]; return v, ok })
}

// settings are the three settings in the fixed order of pairs.
func (e *Env) settings() [3]*Setting {
	return [3]*Setting{&e.HTTP, &e.HTTPS, &e.NoProxy}
}

// Normalized returns the proxy variables a child gets, in os.Environ form
// and a fixed order (http, https, no_proxy; lowercase first): both
// spellings of a set setting carry its value, even the empty string; an
// unset setting is left out. This is the rule the generated bootstrap
// command applies, so curl, Go and every tool the child runs agree.
func (e Env) Normalized() []string {
	var env []string
	for i, s := range e.settings() {
		if s.Set {
			env = append(env, pairs[i][0]+"="+s.Value, pairs[i][1]+"="+s.Value)
		}
	}
	return env
}

// String names the settings that are set, never their values.
func (e Env) String() string {
	var names []string
	for i, s := range e.settings() {
		if s.Set {
			names = append(names, pairs[i][0])
		}
	}
	return "proxy variables [" + strings.Join(names, " ") + "]"
}

// GoString is String, so that %#v does not print values either.
func (e Env) GoString() string { return e.String() }
