package bootstrap

import (
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"strings"
)

// Download limits of the generated command (CONTRACT §10): the installer
// binary may be up to 64 MiB; a transfer slower than 1 KiB/s for 60 s is
// aborted.
const (
	MaxInstallerSize = 64 << 20
	SpeedLimit       = 1024
	SpeedTime        = 60
)

// CacheDir is the download cache under the operator's home.
const CacheDir = "$HOME/.oac/node-bootstrap"

// proxyNames are the proxy variables the command normalizes and sudo keeps.
var proxyNames = []string{"http_proxy", "https_proxy", "no_proxy"}

// Render returns the command for o, ready to paste: one bash subshell
// starting with a space and ending with a newline. It refuses invalid
// options (ErrInvalid).
func Render(o Options) (string, error) {
	console, core, err := o.validate()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	line := func(parts ...string) {
		b.WriteString(strings.Join(parts, ""))
		b.WriteByte('\n')
	}
	line(" (umask 077")
	line(`fail() { printf '%s\n' "$1" >&2; exit "${2:-1}"; }`)
	line(`[ "$(uname -s)/$(uname -m)" = Linux/x86_64 ] || fail 'This node command needs Linux on x86_64 (amd64).'`)
	line(`for c in curl sha256sum flock; do command -v "$c" >/dev/null 2>&1 || fail "This node command needs $c; install it and rerun the command."; done`)
	line(`s=`)
	line(`if [ "$(id -u)" != 0 ]; then command -v sudo >/dev/null 2>&1 || fail 'This node command needs root: run it as root or install sudo.'; s=sudo; fi`)
	line(`d="`, CacheDir, `"`)
	line(`[ ! -L "$HOME/.oac" ] && [ ! -L "$d" ] || fail "$d must not be a symbolic link."`)
	line(`mkdir -p "$d" && [ -d "$d" ] && [ -O "$d" ] && chmod 700 "$d" || fail "$d must be a directory you own."`)
	line(`i="$d/`, o.SHA256, `"`)
	line(`for f in "$d/download.lock" "$d/download.partial" "$i"; do if [ -e "$f" ] || [ -L "$f" ]; then [ -f "$f" ] && [ ! -L "$f" ] && [ -O "$f" ] || fail "$f must be a regular file you own."; fi; done`)
	line(`exec 9>>"$d/download.lock" || exit 1`)
	line(`flock -n 9 || fail 'Another node download is running on this host; wait for it to finish and rerun the command.'`)
	line(`rm -f "$d/download.partial"`)
	line(`trap 'rm -f "$d/download.partial"' EXIT`)
	// The lowercase spelling wins when set, even empty; otherwise the
	// uppercase value is copied (CONTRACT §10, DR:111).
	for _, n := range proxyNames {
		u := strings.ToUpper(n)
		line(`if [ -n "${`, n, `+x}" ]; then `, u, `=$`, n, `; elif [ -n "${`, u, `+x}" ]; then `, n, `=$`, u, `; fi`)
	}
	line(`export http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY`)
	line(`if ! printf '%s  %s\n' '`, o.SHA256, `' "$i" | sha256sum -c --status 2>/dev/null; then`)
	line(`echo '==> Downloading node installer...'`)
	cacert := ""
	if o.CoreCA != "" {
		cacert = " --cacert " + Quote(o.CoreCA)
	}
	line(`curl -fs --connect-timeout 15 --retry 2 --retry-connrefused --retry-delay 1 --max-filesize 67108864 --speed-limit 1024 --speed-time 60`, cacert, ` `,
		Quote(console+"/node-install/"+release.InstallerName), ` -o "$d/download.partial" || { c=$?; fail `,
		Quote("Cannot download the node installer from "+console+"; check the console URL, its TLS certificate and the proxy settings."), ` "$c"; }`)
	line(`echo '==> Verifying node installer...'`)
	line(`printf '%s  %s\n' '`, o.SHA256, `' "$d/download.partial" | sha256sum -c --status || fail 'The downloaded installer does not match this command'\''s checksum; generate a fresh command and run it.'`)
	line(`chmod 700 "$d/download.partial" && mv -f "$d/download.partial" "$i" || fail "Cannot keep the installer in $d."`)
	line(`fi`)
	line(`chmod 700 "$i" || exit 1`)
	line(`trap - EXIT`)
	line(`flock -u 9; exec 9>&-`)
	run := `$s ${s:+--preserve-env=http_proxy,https_proxy,no_proxy,HTTP_PROXY,HTTPS_PROXY,NO_PROXY} "$i" ${NO_COLOR+--no-color}`
	if o.Uninstall {
		args := " --uninstall --installation-id " + Quote(o.InstallationID)
		if o.Force {
			args += " --force"
		}
		line(run, args, ` </dev/null)`)
		return b.String(), nil
	}
	args := " --enrollment-token-stdin --source-url " + Quote(console) + " --core-url " + Quote(core)
	if o.AllowInsecureOrigin {
		args += " --allow-insecure-origin"
	}
	if o.CoreCA != "" {
		args += " --core-ca " + Quote(o.CoreCA)
	}
	args += " --provider " + Quote(o.Provider) + " --installation-id " + Quote(o.InstallationID)
	// printf is a bash builtin: the token is in no process's argv.
	line(`printf '%s\n' `, Quote(o.Token), ` | `, run, args, `)`)
	return b.String(), nil
}

// Quote single-quotes s for bash, writing ' as '\”.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// LogCommand is the command that shows the node service's log.
func LogCommand(installationID string) string {
	unit := "oac-node-" + installationID + ".service"
	if strings.IndexFunc(unit, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}) >= 0 {
		unit = Quote(unit)
	}
	return "sudo journalctl -u " + unit
}
