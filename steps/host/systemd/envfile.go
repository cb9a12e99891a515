package systemd

import (
	"fmt"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/record/proxy"
)

// Loopback is appended to both no_proxy spellings of the environment file,
// so the node never sends a loopback connection through a proxy.
const Loopback = "localhost,127.0.0.1,::1"

// RenderEnvFile returns the text of /etc/oac-node/<id>.env for the proxy
// variables of this run, and whether the file should exist at all: only
// when, after normalisation (a set lowercase name, even empty, gives both
// spellings its value; else an uppercase value is copied to lowercase),
// http_proxy or https_proxy is non-empty. Otherwise the caller removes any
// file an earlier run wrote. Each present name is one NAME="value" line
// with \ and " escaped; both no_proxy spellings are present and end with
// Loopback. A value the file would hold with a newline, carriage return or NUL is
// refused with ErrUnrepresentable; the error names the variable, never its value.
func RenderEnvFile(p proxy.Env) (text []byte, write bool, err error) {
	values := map[string]string{}
	var names []string
	for _, kv := range p.Normalized() {
		name, value, _ := strings.Cut(kv, "=")
		values[name] = value
		names = append(names, name)
	}
	if values["http_proxy"] == "" && values["https_proxy"] == "" {
		return nil, false, nil
	}
	if _, ok := values["no_proxy"]; !ok {
		names = append(names, "no_proxy", "NO_PROXY")
	}
	var b strings.Builder
	for _, name := range names {
		value := values[name]
		if strings.ContainsAny(value, "\n\r\x00") {
			return nil, false, fmt.Errorf("env file: %s holds a line break or NUL: %w", name, ErrUnrepresentable)
		}
		if strings.EqualFold(name, "no_proxy") {
			value = appendList(value, Loopback)
		}
		fmt.Fprintf(&b, "%s=\"%s\"\n", name, strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(value))
	}
	return []byte(b.String()), true, nil
}

// appendList appends the comma-separated items to list.
func appendList(list, items string) string {
	switch {
	case strings.TrimSpace(list) == "":
		return items
	case strings.HasSuffix(list, ","):
		return list + items
	}
	return list + "," + items
}
