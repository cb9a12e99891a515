package systemd

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// Providers the unit knows, and the units each must start after.
var afterByProvider = map[string]string{
	"docker":       "network-online.target docker.service",
	"microsandbox": "network-online.target",
}

// Unit is the node's service unit, /etc/systemd/system/oac-node-<id>.service
// (CONTRACT §4.1). Its text holds no proxy value and no token.
type Unit struct {
	InstallationID ident.InstallationID
	Provider       string // docker or microsandbox
	NodeRoot       string // absolute and clean: /var/lib/oac-node/.oac/nodes/<id>
}

// Name is the unit's name, oac-node-<id>.service.
func (u Unit) Name() string { return layout.UnitName(u.InstallationID) }

// Validate refuses a unit whose values systemd could not read back exactly.
// Errors wrap ErrUnrepresentable and name the field, never a proxy value.
func (u Unit) Validate() error {
	if !u.InstallationID.Valid() {
		return fmt.Errorf("unit: installation id %q is not a canonical UUID: %w", u.InstallationID, ErrUnrepresentable)
	}
	if _, ok := afterByProvider[u.Provider]; !ok {
		return fmt.Errorf("unit: provider %q is neither docker nor microsandbox: %w", u.Provider, ErrUnrepresentable)
	}
	if err := checkPath(u.NodeRoot); err != nil {
		return fmt.Errorf("unit: node root %q: %w", u.NodeRoot, err)
	}
	// The node program lies under the root, and systemd refuses an
	// executable path with a quote or a backslash ("Executable name contains
	// special characters"), however it is escaped.
	if strings.ContainsAny(u.NodeRoot, `"'\`) {
		return fmt.Errorf("unit: node root %q: systemd refuses quotes and backslashes in an executable's path: %w", u.NodeRoot, ErrUnrepresentable)
	}
	return nil
}

// checkPath refuses a path that a unit file cannot carry unchanged: it must
// be absolute and clean (systemd normalizes and refuses otherwise), valid
// UTF-8 without control characters (a newline ends the directive), within
// systemd's path limits, and must not end in a backslash (a line
// continuation) or white space (stripped from the line).
func checkPath(p string) error {
	switch {
	case p == "" || !filepath.IsAbs(p):
		return fmt.Errorf("not an absolute path: %w", ErrUnrepresentable)
	case filepath.Clean(p) != p:
		return fmt.Errorf("not a clean path: %w", ErrUnrepresentable)
	case len(p) >= 4096:
		return fmt.Errorf("longer than PATH_MAX: %w", ErrUnrepresentable)
	case !utf8.ValidString(p):
		return fmt.Errorf("not valid UTF-8: %w", ErrUnrepresentable)
	case strings.HasSuffix(p, `\`):
		return fmt.Errorf("ends in a backslash: %w", ErrUnrepresentable)
	case strings.TrimRight(p, " \t") != p:
		return fmt.Errorf("ends in white space: %w", ErrUnrepresentable)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return fmt.Errorf("contains control character %U: %w", r, ErrUnrepresentable)
		}
	}
	for _, part := range strings.Split(p, "/") {
		if len(part) > 255 {
			return fmt.Errorf("a component is longer than NAME_MAX: %w", ErrUnrepresentable)
		}
	}
	return nil
}

// Render returns the unit text, after Validate.
func (u Unit) Render() ([]byte, error) {
	if err := u.Validate(); err != nil {
		return nil, err
	}
	node := layout.Node{Root: u.NodeRoot}
	var b strings.Builder
	line := func(s ...string) {
		b.WriteString(strings.Join(s, ""))
		b.WriteByte('\n')
	}
	line("[Unit]")
	line("Description=OpenAgentCore sandbox node ", string(u.InstallationID))
	line("Wants=network-online.target")
	line("After=", afterByProvider[u.Provider])
	line("StartLimitIntervalSec=0")
	line()
	line("[Service]")
	line("Type=exec")
	line("User=", layout.Account)
	line("EnvironmentFile=-", layout.Default.EnvFile(u.InstallationID))
	line("ExecStart=:", quoteExecArg(filepath.Join(u.NodeRoot, "native", "bin", "oac-node")),
		" run --config ", quoteExecArg(node.ProviderConfig()),
		" --state-dir ", quoteExecArg(node.StateDir()))
	line("WorkingDirectory=", escapeSpecifiers(u.NodeRoot))
	line("Restart=on-failure")
	line("RestartSec=5s")
	line("RestartPreventExitStatus=78")
	line("KillMode=process")
	line("UMask=0077")
	line()
	line("[Install]")
	line("WantedBy=multi-user.target")
	return []byte(b.String()), nil
}

// quoteExecArg double-quotes one ExecStart word: systemd unescapes \ and "
// inside quotes and expands % specifiers before that.
func quoteExecArg(s string) string {
	s = strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
	return `"` + escapeSpecifiers(s) + `"`
}

// escapeSpecifiers doubles every %, so that systemd's specifier expansion
// gives the literal value back.
func escapeSpecifiers(s string) string { return strings.ReplaceAll(s, "%", "%%") }
