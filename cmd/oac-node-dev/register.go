package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/google/uuid"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/nodeproto"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
)

// enrollment is Core's identity answer (201 of enroll; the identity route
// adds connected and provider_ready), decoded strictly as the platform's
// node program does (wire.go EnrollmentResponse).
type enrollment struct {
	MaxActive            int64                `json:"max_active"`
	MaxRetained          int64                `json:"max_retained"`
	SpecificationDigest  string               `json:"specification_digest"`
	DeploymentGeneration int64                `json:"deployment_generation"`
	Connected            bool                 `json:"connected,omitempty"`
	ProviderReady        bool                 `json:"provider_ready,omitempty"`
	NodeID               string               `json:"node_id"`
	InstallationID       ident.InstallationID `json:"installation_id"`
	Provider             string               `json:"provider"`
}

// enrollRequest is the body of the enroll route.
type enrollRequest struct {
	NodeID               string `json:"node_id"`
	Credential           string `json:"credential"`
	Name                 string `json:"name"`
	Provider             string `json:"provider"`
	BackendFingerprint   string `json:"backend_fingerprint"`
	DeploymentGeneration int64  `json:"deployment_generation"`
	SpecificationDigest  string `json:"specification_digest"`
	CoreURL              string `json:"core_url"`
}

// codePattern is the shape of Core's error codes, the only part of a
// refusal's body that reaches the rejection line (enrollment.go).
var codePattern = regexp.MustCompile(`^[a-z_]{1,64}$`)

// errAuthentication is the platform's node program's text after the
// rejection line of a 401 (node.ErrAuthentication).
const errAuthentication = "sandbox node authentication rejected"

type registerFlags struct {
	config, stateDir, coreURL, name, tokenFile, coreCA string
	insecure                                           bool
}

func register(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("oac-node-dev register", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f registerFlags
	fs.StringVar(&f.config, "config", "", "absolute path of provider.json")
	fs.StringVar(&f.stateDir, "state-dir", "", "absolute state directory")
	fs.StringVar(&f.coreURL, "core-url", "", "Core's origin")
	fs.StringVar(&f.name, "name", "", "the node's display name")
	fs.StringVar(&f.tokenFile, "enrollment-token-file", "", "absolute path of the private file holding the token")
	fs.BoolVar(&f.insecure, "allow-insecure-origin", false, "allow plain http to a host that is not loopback")
	fs.StringVar(&f.coreCA, "core-ca", "", "PEM bundle Core's certificate is checked against")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 || !filepath.IsAbs(f.config) || !filepath.IsAbs(f.stateDir) || !filepath.IsAbs(f.tokenFile) || f.coreURL == "" || f.name == "" {
		fmt.Fprintln(stderr, "usage: oac-node-dev register --config ABS --state-dir ABS --core-url ORIGIN --name NAME --enrollment-token-file ABS [--allow-insecure-origin] [--core-ca PEM]")
		return exitUsage
	}
	code, err := registerNode(ctx, f, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "oac-node-dev register: %v\n", err)
	}
	return code
}

// rejected prints the machine-read rejection line in the platform's
// node program's shapes (enrollment.go enrollmentRejection, printed whole
// by sandbox-node's main): "node enrollment rejected (HTTP <status>)",
// with " <code>" inside the parentheses when Core named one, and for 401
// followed by ": sandbox node authentication rejected". The exit status
// is 78 for 401.
func rejected(stderr io.Writer, ce *coreError) int {
	detail := fmt.Sprintf("HTTP %d", ce.Status)
	if codePattern.MatchString(ce.Code) {
		detail += " " + ce.Code
	}
	if ce.Status == http.StatusUnauthorized {
		fmt.Fprintf(stderr, "node enrollment rejected (%s): %s\n", detail, errAuthentication)
		return exitRejected
	}
	fmt.Fprintf(stderr, "node enrollment rejected (%s)\n", detail)
	return exitError
}

// registerNode registers as the platform's node program does (CONTRACT
// §11; sandbox-node main.go, identity.go InitIdentity, enrollment.go
// Enroll): identity.json is written first, from provider.json alone, with
// capacity 0/0 (an existing one must name the same backend and Core);
// Core's configuration is never read with the token. A failing provider
// probe (5 s) stops it. It then asks the identity route with the node's
// own credential — a node whose earlier answer was lost is recovered there
// — and otherwise enrolls once with the token. Core's capacity must hold
// 1 <= max_active <= max_retained <= 1000000; it is written into
// identity.json before the enrollment line is printed.
func registerNode(ctx context.Context, f registerFlags, stdout, stderr io.Writer) (int, error) {
	if err := checkOrigin(f.coreURL, f.insecure); err != nil {
		return exitError, err
	}
	cfg, err := readConfig(f.config)
	if err != nil {
		return exitError, err
	}
	if cfg.Origin() != f.coreURL {
		return exitError, fmt.Errorf("%s names Core %s, not %s", f.config, cfg.Origin(), f.coreURL)
	}
	token, err := readTokenFile(f.tokenFile)
	if err != nil {
		return exitError, err
	}
	lock, err := lockState(f.stateDir)
	if err != nil {
		return exitError, err
	}
	defer lock.Unlock()
	var caSHA string
	var client *coreClient
	if f.coreCA != "" {
		pool, sum, err := readCA(f.coreCA)
		if err != nil {
			return exitError, err
		}
		caSHA, client = sum, newCoreClient(f.coreURL, pool)
	} else {
		client = newCoreClient(f.coreURL, nil)
	}

	want := newIdentity(cfg, f, caSHA)
	id, err := readIdentity(f.stateDir)
	switch {
	case err == nil:
		if !sameBackend(id, want) || id.CoreURL != f.coreURL {
			return exitError, fmt.Errorf("%s does not match the node configuration", filepath.Join(f.stateDir, layout.IdentityFileName))
		}
	case errors.Is(err, os.ErrNotExist):
		id = want
		if err := writeIdentity(f.stateDir, id); err != nil {
			return exitError, err
		}
	default:
		return exitError, err
	}
	if diag := probe(ctx, cfg, 5*time.Second); diag != "" {
		return exitError, fmt.Errorf("local provider readiness check failed (%s)", diag)
	}

	// A node Core knows already (its enrollment answer was lost) is
	// recovered with its own credential; any failure here leads to the
	// enrollment.
	var got enrollment
	if err := client.do(ctx, http.MethodGet, "/api/v1/sandbox-node/identity?node_id="+id.Identity.NodeID, id.Credential, nil, nil, &got); err == nil {
		return finish(f.stateDir, id, &got, stdout)
	}
	req := enrollRequest{
		NodeID: id.Identity.NodeID, Credential: id.Credential, Name: f.name, Provider: id.Identity.Provider,
		BackendFingerprint: id.Identity.BackendFingerprint, DeploymentGeneration: id.Identity.DeploymentGeneration,
		SpecificationDigest: id.Identity.SpecificationDigest, CoreURL: f.coreURL,
	}
	got = enrollment{}
	err = client.do(ctx, http.MethodPost, "/api/v1/sandbox-node/enroll", token, nil, req, &got)
	var ce *coreError
	switch {
	case errors.As(err, &ce):
		return rejected(stderr, ce), nil
	case errors.Is(err, errAnswer):
		return exitError, err
	case err != nil:
		return exitError, errors.New("enrollment response unconfirmed; retry with the same state directory")
	}
	return finish(f.stateDir, id, &got, stdout)
}

// sameBackend: two identities of the same node backend (the platform's
// sameBackend, the node id aside).
func sameBackend(a, b *noderoot.NodeIdentity) bool {
	x, y := a.Identity, b.Identity
	return x.SpecificationDigest == y.SpecificationDigest && x.DeploymentGeneration == y.DeploymentGeneration &&
		x.InstallationID == y.InstallationID && x.Provider == y.Provider && x.BackendFingerprint == y.BackendFingerprint
}

// verify checks Core's identity answer against ours and its capacity
// (enrollment.go verifyEnrollment).
func verify(id *noderoot.NodeIdentity, got *enrollment) error {
	if got.NodeID != id.Identity.NodeID || got.InstallationID != id.Identity.InstallationID || got.Provider != id.Identity.Provider ||
		got.DeploymentGeneration != id.Identity.DeploymentGeneration || got.SpecificationDigest != id.Identity.SpecificationDigest {
		return errors.New("Core confirmed a different node identity")
	}
	if got.MaxActive < 1 || got.MaxRetained < got.MaxActive || got.MaxRetained > nodeproto.MaxCapacity {
		return fmt.Errorf("Core approved an invalid node capacity (max_active %d, max_retained %d)", got.MaxActive, got.MaxRetained)
	}
	return nil
}

// retain verifies Core's answer and writes its capacity into
// identity.json when it changed.
func retain(stateDir string, id *noderoot.NodeIdentity, got *enrollment) error {
	if err := verify(id, got); err != nil {
		return err
	}
	if got.MaxActive != id.Identity.MaxActive || got.MaxRetained != id.Identity.MaxRetained {
		id.Identity.MaxActive, id.Identity.MaxRetained = got.MaxActive, got.MaxRetained
		return writeIdentity(stateDir, id)
	}
	return nil
}

// finish retains Core's answer and prints the enrollment line (the
// identity's values, without connected and provider_ready).
func finish(stateDir string, id *noderoot.NodeIdentity, got *enrollment, stdout io.Writer) (int, error) {
	if err := retain(stateDir, id, got); err != nil {
		return exitError, err
	}
	i := id.Identity
	line, err := json.Marshal(enrollment{MaxActive: i.MaxActive, MaxRetained: i.MaxRetained, SpecificationDigest: i.SpecificationDigest,
		DeploymentGeneration: i.DeploymentGeneration, NodeID: i.NodeID, InstallationID: i.InstallationID, Provider: i.Provider})
	if err != nil {
		return exitError, err
	}
	fmt.Fprintf(stdout, "%s\n", line)
	return exitOK, nil
}

// refreshIdentity asks the identity route with the node's credential
// before run connects, as the platform's node program does (enrollment.go
// RefreshIdentity): 401 is errRejected; Core's answer is verified and its
// capacity retained.
func refreshIdentity(ctx context.Context, n *node) error {
	client := newCoreClient(n.id.CoreURL, n.tls.RootCAs)
	var got enrollment
	err := client.do(ctx, http.MethodGet, "/api/v1/sandbox-node/identity?node_id="+n.id.Identity.NodeID, n.id.Credential, nil, nil, &got)
	var ce *coreError
	switch {
	case errors.As(err, &ce) && ce.Status == http.StatusUnauthorized:
		return errRejected
	case err != nil:
		return fmt.Errorf("cannot confirm the approved node capacity: %w", err)
	}
	return retain(n.stateDir, n.id, &got)
}

// newIdentity makes the node's identity from provider.json: a new node
// id, a credential of 32 random bytes (64 hex) and capacity 0/0 until Core
// approves one (the platform's InitIdentity).
func newIdentity(cfg *provider.Config, f registerFlags, caSHA string) *noderoot.NodeIdentity {
	var secret [32]byte
	rand.Read(secret[:])
	id := &noderoot.NodeIdentity{Credential: hex.EncodeToString(secret[:]), CoreURL: f.coreURL, AllowInsecureOrigin: f.insecure}
	id.Identity.NodeID = uuid.NewString()
	id.Identity.InstallationID = cfg.InstallationID
	id.Identity.Provider = cfg.Provider
	id.Identity.DeploymentGeneration = cfg.Generation
	id.Identity.SpecificationDigest = cfg.Specification.Digest()
	fp := sha256.Sum256([]byte(cfg.Provider + "\x00" + cfg.InstallationID.String() + "\x00" + backendName(cfg)))
	id.Identity.BackendFingerprint = hex.EncodeToString(fp[:])
	if f.coreCA != "" {
		id.CoreCA, id.CoreCASHA256 = f.coreCA, caSHA
	}
	return id
}

// backendName names the provider backend the node drives.
func backendName(cfg *provider.Config) string {
	if cfg.Docker != nil {
		return cfg.Docker.Host
	}
	return cfg.Microsandbox.RuntimeHome
}

// readConfig reads and validates provider.json.
func readConfig(path string) (*provider.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the provider configuration: %w", err)
	}
	if len(data) > provider.MaxSize {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, provider.MaxSize)
	}
	cfg, err := provider.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}
