package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/openagentcore/oac-node-install/steps/ident"
)

// installerFlags is the original installer's command line (CONTRACT §4.4).
type installerFlags struct {
	sourceURL           string
	bundle              string
	coreURL             string
	allowInsecureOrigin bool
	coreCA              string
	provider            string
	installationID      string
	tokenStdin          bool
	uninstall           bool
	force               bool
	noColor             bool
	update              bool
	// Generation helper (hidden; run by oac-node).
	generationAction    string
	generation          int64
	specificationDigest string
	// Tests only: root of the host's paths.
	hostRoot string

	set map[string]bool
}

func parseInstallerFlags(args []string) (*installerFlags, error) {
	f := &installerFlags{set: map[string]bool{}}
	fs := flag.NewFlagSet("oac-node-install", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.sourceURL, "source-url", "", "console origin the command came from")
	fs.StringVar(&f.bundle, "bundle", "", "local offline bundle directory")
	fs.StringVar(&f.coreURL, "core-url", "", "Core's public origin")
	fs.BoolVar(&f.allowInsecureOrigin, "allow-insecure-origin", false, "allow plain http to a non-loopback origin")
	fs.StringVar(&f.coreCA, "core-ca", "", "PEM file of the CA that signs Core's certificate")
	fs.StringVar(&f.provider, "provider", "", "docker or microsandbox (an assertion)")
	fs.StringVar(&f.installationID, "installation-id", "", "Core installation id (canonical UUID)")
	fs.BoolVar(&f.tokenStdin, "enrollment-token-stdin", false, "read the enrollment token from standard input")
	fs.BoolVar(&f.uninstall, "uninstall", false, "remove the node")
	fs.BoolVar(&f.force, "force", false, "with --uninstall: skip the Core check")
	fs.BoolVar(&f.noColor, "no-color", false, "plain output")
	fs.BoolVar(&f.update, "update", false, "in-place updates (unsupported)")
	fs.StringVar(&f.generationAction, "generation-action", "", "generation helper: prepare, repair or collect")
	var gen string
	fs.StringVar(&gen, "generation", "", "generation helper: generation number")
	fs.StringVar(&f.specificationDigest, "specification-digest", "", "generation helper: specification digest")
	fs.StringVar(&f.hostRoot, "host-root", "/", "root of the host's paths (tests)")
	if err := fs.Parse(args); err != nil {
		return nil, usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q", fs.Arg(0))
	}
	fs.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	if f.update {
		return nil, usagef("--update is not supported: in-place updates are refused; uninstall and install again")
	}
	if f.installationID == "" {
		return nil, usagef("--installation-id is required")
	}
	if err := validateInstallationID(f.installationID); err != nil {
		return nil, err
	}
	switch {
	case f.generationAction != "":
		return f, f.validateHelper(gen)
	case f.uninstall:
		return f, f.validateUninstall()
	}
	return f, f.validateInstall()
}

func (f *installerFlags) only(allowed ...string) error {
	ok := map[string]bool{"installation-id": true, "host-root": true, "no-color": true}
	for _, a := range allowed {
		ok[a] = true
	}
	for name := range f.set {
		if !ok[name] {
			return usagef("--%s cannot be used here", name)
		}
	}
	return nil
}

func (f *installerFlags) validateUninstall() error {
	return f.only("uninstall", "force")
}

func (f *installerFlags) validateHelper(gen string) error {
	if err := f.only("generation-action", "generation", "specification-digest"); err != nil {
		return err
	}
	switch f.generationAction {
	case "prepare", "repair", "collect":
	default:
		return usagef("--generation-action must be prepare, repair or collect")
	}
	n, err := strconv.ParseInt(gen, 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != gen {
		return usagef("--generation must be an integer from 1 to 2^63-1")
	}
	f.generation = n
	if !ident.LowerHex(f.specificationDigest, 64) {
		return usagef("--specification-digest must be 64 lowercase hex digits")
	}
	return nil
}

func (f *installerFlags) validateInstall() error {
	if f.force {
		return usagef("--force is only accepted with --uninstall")
	}
	if (f.sourceURL == "") == (f.bundle == "") {
		return usagef("exactly one of --source-url and --bundle is required")
	}
	if f.coreURL == "" {
		return usagef("--core-url is required")
	}
	var err error
	if f.coreURL, err = validateOrigin("--core-url", f.coreURL, f.allowInsecureOrigin); err != nil {
		return err
	}
	if f.sourceURL != "" {
		if f.sourceURL, err = validateOrigin("--source-url", f.sourceURL, f.allowInsecureOrigin); err != nil {
			return err
		}
	}
	if f.bundle != "" && !filepath.IsAbs(f.bundle) {
		return usagef("--bundle must be an absolute directory")
	}
	if f.coreCA != "" && !filepath.IsAbs(f.coreCA) {
		return usagef("--core-ca must be an absolute path to a PEM file")
	}
	switch f.provider {
	case "", "docker", "microsandbox":
	default:
		return usagef("--provider must be docker or microsandbox")
	}
	return nil
}

// validateInstallationID accepts only a canonical (lowercase, hyphenated)
// UUID.
func validateInstallationID(id string) error {
	u, err := uuid.Parse(id)
	if err != nil || u.String() != id {
		return usagef("--installation-id must be a canonical UUID (lowercase, 8-4-4-4-12)")
	}
	return nil
}

// validateOrigin checks an http(s) origin and returns it without a trailing
// slash. Plain http is accepted only for loopback hosts unless insecure.
func validateOrigin(name, raw string, insecure bool) (string, error) {
	if strings.ContainsAny(raw, " \t\r\n?#\\") {
		return "", usagef("%s must be an origin such as https://console.example.com (no spaces, query, fragment or backslash)", name)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", usagef("%s must be an http or https origin with a host", name)
	}
	if u.User != nil {
		return "", usagef("%s must not contain credentials", name)
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", usagef("%s must be an origin without a path", name)
	}
	if u.Scheme == "http" && !insecure && !isLoopback(u.Hostname()) {
		return "", usagef("%s uses plain http to a host that is not loopback; use https or --allow-insecure-origin", name)
	}
	return u.Scheme + "://" + u.Host, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (f *installerFlags) String() string {
	return fmt.Sprintf("installation %s", f.installationID)
}
