package bootstrap

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// MaxTokenLength is the longest enrollment token the installer accepts
// (CONTRACT §4.4).
const MaxTokenLength = ident.MaxTokenLength

// ErrInvalid: an option cannot be rendered into a command (*FieldError
// names which).
var ErrInvalid = errors.New("invalid bootstrap command option")

// FieldError is a refused option.
type FieldError struct {
	Field  string // the option's command-line name, e.g. "--console"
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%v %s: %s", ErrInvalid, e.Field, e.Reason)
}

// Unwrap lets callers test with errors.Is(err, ErrInvalid).
func (e *FieldError) Unwrap() error { return ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Options are the facts of one bootstrap command.
type Options struct {
	// Console is the console origin the installer is fetched from and
	// passed as --source-url.
	Console string
	// CoreURL is Core's public origin (install only).
	CoreURL string
	// InstallationID is the installation's canonical UUID.
	InstallationID string
	// Provider is docker or microsandbox (install only; an assertion for
	// the installer).
	Provider string
	// SHA256 is the installer binary's sha256 (64 lowercase hex), as the
	// console's SHA256SUMS lists it.
	SHA256 string
	// CoreCA, when set, is the absolute path on the node host of the PEM
	// bundle that the download and the installer (--core-ca) trust instead
	// of the system roots (install only).
	CoreCA string
	// AllowInsecureOrigin adds --allow-insecure-origin (install only) and
	// permits plain http to a host that is not loopback.
	AllowInsecureOrigin bool
	// Uninstall renders the uninstall command instead of the install one.
	Uninstall bool
	// Force adds --force to the uninstall command.
	Force bool
	// Token is the enrollment token (install only): at most 4096
	// characters, no whitespace. It appears only in the rendered text.
	Token string
}

// validate checks every option and returns the normalized origins.
func (o *Options) validate() (console, core string, err error) {
	if console, err = origin("--console", o.Console, o.AllowInsecureOrigin); err != nil {
		return "", "", err
	}
	if !ident.CanonicalUUID(o.InstallationID) {
		return "", "", invalid("--installation-id", "must be a canonical UUID (lowercase, 8-4-4-4-12)")
	}
	if !ident.LowerHex(o.SHA256, 64) {
		return "", "", invalid("--sha256", "must be 64 lowercase hex digits (the installer's line in SHA256SUMS)")
	}
	if o.Uninstall {
		switch {
		case o.Token != "":
			return "", "", invalid("--token-stdin", "an uninstall command takes no token")
		case o.CoreURL != "", o.Provider != "", o.CoreCA != "":
			return "", "", invalid("--uninstall", "accepts only --console, --installation-id, --sha256 and --force")
		}
		return console, "", nil
	}
	if o.Force {
		return "", "", invalid("--force", "is only for --uninstall")
	}
	if core, err = origin("--core-url", o.CoreURL, o.AllowInsecureOrigin); err != nil {
		return "", "", err
	}
	switch o.Provider {
	case release.ProviderDocker, release.ProviderMicrosandbox:
	default:
		return "", "", invalid("--provider", "must be docker or microsandbox")
	}
	if o.CoreCA != "" && (!filepath.IsAbs(o.CoreCA) || filepath.Clean(o.CoreCA) != o.CoreCA || strings.ContainsAny(o.CoreCA, "\x00\r\n")) {
		return "", "", invalid("--core-ca", "must be a clean absolute path on the node host")
	}
	switch err := ident.CheckToken(o.Token); {
	case errors.Is(err, ident.ErrTokenEmpty):
		return "", "", invalid("--token-stdin", "an install command needs the enrollment token")
	case err != nil:
		return "", "", invalid("--token-stdin", "%v", err)
	}
	return console, core, nil
}

// origin checks an http(s) origin by ident.ParseOrigin, refusing the
// characters a shell would take apart too, and returns it without a
// trailing slash. Plain http is accepted only for a loopback host unless
// insecure.
func origin(field, raw string, insecure bool) (string, error) {
	if strings.ContainsAny(raw, " \t\r\n?#\\'\"`$") {
		return "", invalid(field, "must be an origin such as https://console.example.com")
	}
	u, err := ident.ParseOrigin(raw)
	var oe *ident.OriginError
	if errors.As(err, &oe) {
		switch oe.Reason {
		case ident.OriginNotHTTP:
			return "", invalid(field, "must be an http or https origin with a host")
		case ident.OriginCredentials:
			return "", invalid(field, "must not contain credentials")
		case ident.OriginPath:
			return "", invalid(field, "must be an origin without a path")
		}
		return "", invalid(field, "must be an origin such as https://console.example.com")
	}
	if !insecure && ident.PlainHTTPToRemote(u) {
		return "", invalid(field, "uses plain http to a host that is not loopback; use https or --allow-insecure-origin")
	}
	return u.Scheme + "://" + u.Host, nil
}
