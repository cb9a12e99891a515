package main

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// installerFlags is the original installer's command line (CONTRACT §4.4),
// the flags of the root command. One run is one of three modes: install
// (the default), uninstall (--uninstall) or the generation helper
// (--generation-action, hidden; run by oac-node).
type installerFlags struct {
	// host, when set (the root command line's), is the host whose records
	// fill in a rerun's flags: `--installation-id <id>` alone, or no flag
	// when the host has exactly one installation, continues it as given
	// first (recall.go).
	host                func() layout.Host
	sourceURL           string
	bundle              string
	coreURL             string
	allowInsecureOrigin bool
	coreCA              string
	provider            string
	// installationIDArg is --installation-id as typed; installationID
	// is it parsed, set by validate.
	installationIDArg string
	installationID    ident.InstallationID
	tokenStdin        bool
	uninstall         bool
	force             bool
	noColor           bool
	json              bool
	update            bool
	// Generation helper (hidden; run by oac-node).
	generationAction    string
	generationText      string
	generation          int64
	specificationDigest string

	// insecure lists the origins accepted only because of
	// --allow-insecure-origin: plain http to a host that is not loopback.
	insecure []string
}

// The flag names of §4.4, as the generated command spells them.
const (
	flagSourceURL           = "source-url"
	flagBundle              = "bundle"
	flagCoreURL             = "core-url"
	flagAllowInsecureOrigin = "allow-insecure-origin"
	flagCoreCA              = "core-ca"
	flagProvider            = "provider"
	flagInstallationID      = "installation-id"
	flagTokenStdin          = "enrollment-token-stdin"
	flagUninstall           = "uninstall"
	flagForce               = "force"
	flagNoColor             = "no-color"
	flagJSON                = "json"
	flagUpdate              = "update"
	flagGenerationAction    = "generation-action"
	flagGeneration          = "generation"
	flagSpecificationDigest = "specification-digest"
)

// hiddenInstallerFlags are accepted but not shown by --help: the generation
// helper's (oac-node runs it) and --update (always refused).
var hiddenInstallerFlags = []string{flagGenerationAction, flagGeneration, flagSpecificationDigest, flagUpdate}

// bind defines the flags on fs, in the order --help lists them.
func (f *installerFlags) bind(fs *pflag.FlagSet) {
	fs.SortFlags = false
	fs.BoolVar(&f.tokenStdin, flagTokenStdin, false, "read the enrollment token from standard input (a new node; a registered rerun needs none)")
	fs.StringVar(&f.sourceURL, flagSourceURL, "", "origin of the console the command came from, e.g. https://console.example.com")
	fs.StringVar(&f.bundle, flagBundle, "", "absolute directory of an offline bundle (instead of --source-url)")
	fs.StringVar(&f.coreURL, flagCoreURL, "", "Core's public origin, e.g. https://core.example.com")
	fs.StringVar(&f.provider, flagProvider, "", "sandbox provider the command expects: docker or microsandbox")
	fs.StringVar(&f.installationIDArg, flagInstallationID, "", "the node's installation id from Web (canonical UUID; required, except for a rerun on a host with one node; a rerun needs no other flag)")
	fs.StringVar(&f.coreCA, flagCoreCA, "", "absolute path of a PEM file with the CA that signs Core's certificate")
	fs.BoolVar(&f.allowInsecureOrigin, flagAllowInsecureOrigin, false, "allow plain http to an origin that is not loopback")
	fs.BoolVar(&f.uninstall, flagUninstall, false, "remove the node (with --installation-id, and --force)")
	fs.BoolVar(&f.force, flagForce, false, "with --uninstall: remove the node even when Core cannot confirm it no longer lists it")
	fs.BoolVar(&f.noColor, flagNoColor, false, "plain output without colors (sets NO_COLOR=1)")
	fs.BoolVar(&f.json, flagJSON, false, "install and --uninstall: print one JSON document of the result on standard output (the progress goes to standard error)")
	fs.BoolVar(&f.update, flagUpdate, false, "in-place update (not supported: always refused)")
	fs.StringVar(&f.generationAction, flagGenerationAction, "", "generation helper: prepare, repair or collect")
	fs.StringVar(&f.generationText, flagGeneration, "", "generation helper: generation number (1 to 2^63-1)")
	fs.StringVar(&f.specificationDigest, flagSpecificationDigest, "", "generation helper: specification digest (64 lowercase hex digits)")
	for _, name := range hiddenInstallerFlags {
		fs.MarkHidden(name)
	}
}

// installerMode is what a root command line asks for.
type installerMode int

const (
	modeInstall installerMode = iota
	modeUninstall
	modeHelper
)

// action names install's and uninstall's mode in the --json result.
func (m installerMode) action() string {
	if m == modeUninstall {
		return "uninstall"
	}
	return "install"
}

// mode is the run's mode as the set flags say; the generation helper wins
// so that its refusals name it.
func (f *installerFlags) mode() installerMode {
	switch {
	case f.generationAction != "":
		return modeHelper
	case f.uninstall:
		return modeUninstall
	}
	return modeInstall
}

// allowedIn lists, per mode, the flags a command line of that mode may set
// (besides the test builds' --host-root).
var allowedIn = map[installerMode][]string{
	modeInstall: {flagSourceURL, flagBundle, flagCoreURL, flagAllowInsecureOrigin, flagCoreCA, flagProvider,
		flagInstallationID, flagTokenStdin, flagNoColor, flagJSON},
	// CONTRACT §10: --uninstall accepts --installation-id, --force and
	// --no-color only; --json (the result for a fleet tool, result.go) is
	// this installer's documented extension.
	modeUninstall: {flagUninstall, flagInstallationID, flagForce, flagNoColor, flagJSON},
	// The platform's node program adds --allow-insecure-origin to the
	// helper's command line when the node's identity.json allows an
	// insecure origin. The helper holds its origins to that same recorded
	// policy (steps/noderoot), so the flag changes nothing; it is accepted
	// so that such a node's helper runs.
	modeHelper: {flagGenerationAction, flagGeneration, flagSpecificationDigest, flagInstallationID, flagNoColor,
		flagAllowInsecureOrigin},
}

// validate checks the parsed command line against CONTRACT §4.4 and §10 and
// normalizes it (origins lose a trailing slash). fs holds which flags were
// set. Every failure is a usageError, returned before anything is read or
// changed.
func (f *installerFlags) validate(fs *pflag.FlagSet) error {
	if f.update {
		return usagef("--update is not supported: in-place updates are refused; uninstall the node and install it again")
	}
	if err := f.onlyAllowed(fs); err != nil {
		return err
	}
	if err := validUTF8(fs); err != nil {
		return err
	}
	if f.installationIDArg == "" && f.host != nil && f.mode() == modeInstall {
		if id, ok := soleInstallation(f.host()); ok {
			f.installationIDArg = id.String()
		}
	}
	if f.installationIDArg == "" {
		return usagef("--installation-id is required")
	}
	id, err := parseInstallationID(f.installationIDArg)
	if err != nil {
		return err
	}
	f.installationID = id
	switch f.mode() {
	case modeHelper:
		return f.validateHelper()
	case modeUninstall:
		return nil
	}
	if f.host == nil {
		return f.validateInstall()
	}
	r, err := recall(f.host(), id)
	if err != nil {
		return err
	}
	if err := f.fillFromRecord(r, fs.Changed); err != nil {
		return err
	}
	if err := f.validateInstall(); err != nil {
		if !r.found && f.sourceURL == "" && f.bundle == "" {
			return usagef("%v: this host does not record installation %s (a new node, or an installation stopped before it recorded itself): run the full command Web generated", err, id)
		}
		return err
	}
	return f.agreeWithRecord(r)
}

// onlyAllowed refuses a flag that the run's mode does not take.
func (f *installerFlags) onlyAllowed(fs *pflag.FlagSet) error {
	mode := f.mode()
	ok := map[string]bool{flagHostRoot: true}
	for _, name := range allowedIn[mode] {
		ok[name] = true
	}
	var bad error
	fs.Visit(func(fl *pflag.Flag) {
		if bad != nil || ok[fl.Name] {
			return
		}
		switch {
		case fl.Name == flagForce:
			bad = usagef("--force is only accepted with --uninstall")
		case mode == modeUninstall:
			bad = usagef("--uninstall accepts only --installation-id, --force, --no-color and --json, not --%s", fl.Name)
		case mode == modeHelper:
			bad = usagef("--%s cannot be used with --generation-action", fl.Name)
		case fl.Name == flagGeneration || fl.Name == flagSpecificationDigest:
			bad = usagef("--%s is only accepted with --generation-action", fl.Name)
		default:
			bad = usagef("--%s cannot be used here", fl.Name)
		}
	})
	return bad
}

func (f *installerFlags) validateHelper() error {
	switch f.generationAction {
	case "prepare", "repair", "collect":
	default:
		return usagef("--generation-action must be prepare, repair or collect")
	}
	n, err := strconv.ParseInt(f.generationText, 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != f.generationText {
		return usagef("--generation must be an integer from 1 to 2^63-1")
	}
	f.generation = n
	if !ident.LowerHex(f.specificationDigest, 64) {
		return usagef("--specification-digest must be 64 lowercase hex digits")
	}
	return nil
}

func (f *installerFlags) validateInstall() error {
	if (f.sourceURL == "") == (f.bundle == "") {
		return usagef("exactly one of --source-url and --bundle is required")
	}
	if f.coreURL == "" {
		return usagef("--core-url is required")
	}
	var err error
	if f.coreURL, err = f.origin("--"+flagCoreURL, f.coreURL); err != nil {
		return err
	}
	if f.sourceURL != "" {
		if f.sourceURL, err = f.origin("--"+flagSourceURL, f.sourceURL); err != nil {
			return err
		}
	}
	if f.bundle != "" && !plainAbs(f.bundle) {
		return usagef("--bundle must be an absolute directory, without a '.' or '..' component or a control character")
	}
	if f.coreCA != "" && !plainAbs(f.coreCA) {
		return usagef("--core-ca must be an absolute path to a PEM file, without a '.' or '..' component or a control character")
	}
	switch f.provider {
	case "", "docker", "microsandbox":
	default:
		return usagef("--provider must be docker or microsandbox")
	}
	return nil
}

// validUTF8 refuses a flag value that is not valid UTF-8: it would reach
// messages, records and unit files in a form other than the one given.
// The refusal names the flag, never the value.
func validUTF8(fs *pflag.FlagSet) error {
	var bad error
	fs.Visit(func(fl *pflag.Flag) {
		if bad == nil && !utf8.ValidString(fl.Value.String()) {
			bad = usagef("--%s is not valid UTF-8", fl.Name)
		}
	})
	return bad
}

// plainAbs reports whether p is an absolute path without a "." or ".."
// component and without a control character (a trailing slash is
// accepted).
func plainAbs(p string) bool {
	if !filepath.IsAbs(p) || strings.IndexFunc(p, unicode.IsControl) >= 0 {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if c == "." || c == ".." {
			return false
		}
	}
	return true
}

// origin validates one origin flag and records it when only
// --allow-insecure-origin let it through.
func (f *installerFlags) origin(name, raw string) (string, error) {
	o, insecure, err := validateOrigin(name, raw, f.allowInsecureOrigin)
	if insecure {
		f.insecure = append(f.insecure, name)
	}
	return o, err
}

// parseInstallationID is --installation-id's parse at the command line,
// the one place a typed id comes from: ident.ParseInstallationID, its
// refusal a usage error naming the flag.
func parseInstallationID(raw string) (ident.InstallationID, error) {
	id, err := ident.ParseInstallationID(raw)
	var ie *ident.InstallationIDError
	if errors.As(err, &ie) {
		// What was typed, clipped and made safe for the terminal.
		return "", usagef("--installation-id \"%s\": %s", privsep.SanitizeField(ident.Clip(ie.Got, 64)), ident.UUIDRule)
	}
	if err != nil {
		return "", usagef("--installation-id %v", err)
	}
	return id, nil
}

// validateOrigin checks an http(s) origin and returns it without a trailing
// slash. Plain http is accepted only for loopback hosts, or, when allowed,
// for any host; insecure reports that case.
func validateOrigin(name, raw string, allowInsecure bool) (origin string, insecure bool, err error) {
	if strings.IndexFunc(raw, unicode.IsSpace) >= 0 || strings.ContainsAny(raw, "?#\\") {
		return "", false, usagef("%s must be an origin such as https://console.example.com (no spaces, query, fragment or backslash)", name)
	}
	u, err := ident.ParseOrigin(raw)
	var oe *ident.OriginError
	if errors.As(err, &oe) {
		u = oe.URL
	}
	switch {
	case u == nil || u.Hostname() == "":
		return "", false, usagef("%s must be an http or https origin with a host", name)
	case oe != nil && oe.Reason == ident.OriginCredentials:
		return "", false, usagef("%s must not contain credentials", name)
	case !validHost(u.Hostname()) || !validPort(u.Port()):
		return "", false, usagef("%s must name its host as a DNS name (ASCII; punycode for an international name) or an IP address, with a port from 1 to 65535", name)
	case err != nil:
		return "", false, usagef("%s must be an origin without a path", name)
	}
	if ident.PlainHTTPToRemote(u) {
		if !allowInsecure {
			return "", false, usagef("%s uses plain http to a host that is not loopback; use https or --allow-insecure-origin", name)
		}
		insecure = true
	}
	return u.Scheme + "://" + u.Host, insecure, nil
}

// validHost accepts an IP address or a DNS name of ASCII labels (letters,
// digits, '-' and '_'; 1 to 63 bytes each; at most 253 in all, a final dot
// aside).
func validHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// validPort accepts no port or one from 1 to 65535.
func validPort(p string) bool {
	if p == "" {
		return true
	}
	n, err := strconv.ParseUint(p, 10, 16)
	return err == nil && n > 0
}

func (f *installerFlags) String() string {
	return fmt.Sprintf("installation %s", f.installationID)
}
