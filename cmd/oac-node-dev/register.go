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

	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
)

// enrollment is Core's identity answer (201 of enroll; the identity route
// adds connected and provider_ready) and the line register prints.
type enrollment struct {
	MaxActive            int64                `json:"max_active"`
	MaxRetained          int64                `json:"max_retained"`
	SpecificationDigest  string               `json:"specification_digest"`
	DeploymentGeneration int64                `json:"deployment_generation"`
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

// enrollAttempts bounds the enrollments of one register run whose answer
// was lost; retryPause is the pause before attempt i+1.
var (
	enrollAttempts = 4
	retryPause     = func(i int) time.Duration { return time.Duration(1<<i) * time.Second }
)

var codePattern = regexp.MustCompile(`^[a-z_]+$`)

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

// rejected prints the machine-read rejection line and returns the exit
// status: 78 for 401.
func rejected(stderr io.Writer, ce *coreError) int {
	if codePattern.MatchString(ce.Code) {
		fmt.Fprintf(stderr, "node enrollment rejected (HTTP %03d %s)\n", ce.Status, ce.Code)
	} else {
		fmt.Fprintf(stderr, "node enrollment rejected (HTTP %03d)\n", ce.Status)
	}
	if ce.Status == http.StatusUnauthorized {
		return exitRejected
	}
	return exitError
}

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

	id, err := readIdentity(f.stateDir)
	switch {
	case err == nil:
		// A previous run wrote the identity; its enrollment may have
		// succeeded with the answer lost.
		if id.Identity.InstallationID != cfg.InstallationID || id.Identity.Provider != cfg.Provider || id.CoreURL != f.coreURL {
			return exitError, fmt.Errorf("%s belongs to another installation, provider or Core", filepath.Join(f.stateDir, layout.IdentityFileName))
		}
		if done, err := confirmed(ctx, client, id); err != nil {
			return exitError, err
		} else if done != nil {
			return finish(f.stateDir, id, done, stdout)
		}
	case errors.Is(err, os.ErrNotExist):
		var conf *core.Configuration
		if conf, err = readConfiguration(ctx, client, token); err != nil {
			var ce *coreError
			if errors.As(err, &ce) {
				return rejected(stderr, ce), nil
			}
			return exitError, err
		}
		if conf.InstallationID != cfg.InstallationID || conf.Provider != cfg.Provider || conf.Generation != cfg.Generation || conf.SpecificationDigest != cfg.Specification.Digest() {
			return exitError, fmt.Errorf("Core's deployment (generation %d) is not the one %s was prepared for (generation %d)", conf.Generation, f.config, cfg.Generation)
		}
		id = newIdentity(cfg, conf, f, caSHA)
		// Durable before Core hears of it: a lost answer is recovered
		// under this identity.
		if err := writeIdentity(f.stateDir, id); err != nil {
			return exitError, err
		}
	default:
		return exitError, err
	}
	if diag := probe(ctx, cfg, 5*time.Second); diag == diagDockerUnavailable || diag == diagKVMUnavailable {
		return exitError, fmt.Errorf("the local provider is not reachable (%s)", diag)
	}

	req := enrollRequest{
		NodeID: id.Identity.NodeID, Credential: id.Credential, Name: f.name, Provider: id.Identity.Provider,
		BackendFingerprint: id.Identity.BackendFingerprint, DeploymentGeneration: id.Identity.DeploymentGeneration,
		SpecificationDigest: id.Identity.SpecificationDigest, CoreURL: f.coreURL,
	}
	var lastErr error
	for i := range enrollAttempts {
		if i > 0 {
			select {
			case <-ctx.Done():
				return exitError, ctx.Err()
			case <-time.After(retryPause(i - 1)):
			}
			// The last answer was lost: ask before enrolling again.
			done, err := confirmed(ctx, client, id)
			if err != nil {
				lastErr = err
				continue
			}
			if done != nil {
				return finish(f.stateDir, id, done, stdout)
			}
		}
		var got enrollment
		err := client.do(ctx, http.MethodPost, "/api/v1/sandbox-node/enroll", token, nil, req, &got)
		var ce *coreError
		if errors.As(err, &ce) {
			return rejected(stderr, ce), nil
		}
		if err == nil {
			return finish(f.stateDir, id, &got, stdout)
		}
		lastErr = err
		fmt.Fprintf(stderr, "oac-node-dev register: no answer to the enrollment (%v); checking with Core\n", err)
	}
	return exitError, fmt.Errorf("the enrollment was not confirmed: %w", lastErr)
}

// confirmed asks the identity route whether Core knows the node under
// this credential: the identity when it does, nil when Core answers 401.
func confirmed(ctx context.Context, client *coreClient, id *noderoot.NodeIdentity) (*enrollment, error) {
	var got enrollment
	err := client.do(ctx, http.MethodGet, "/api/v1/sandbox-node/identity?node_id="+id.Identity.NodeID, id.Credential, nil, nil, &got)
	var ce *coreError
	if errors.As(err, &ce) && ce.Status == http.StatusUnauthorized {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &got, nil
}

// finish checks Core's identity against ours, stores Core's capacity and
// prints the enrollment line.
func finish(stateDir string, id *noderoot.NodeIdentity, got *enrollment, stdout io.Writer) (int, error) {
	if got.NodeID != id.Identity.NodeID || got.InstallationID != id.Identity.InstallationID || got.Provider != id.Identity.Provider ||
		got.DeploymentGeneration != id.Identity.DeploymentGeneration || got.SpecificationDigest != id.Identity.SpecificationDigest {
		return exitError, errors.New("Core confirmed a different node identity")
	}
	if got.MaxActive != id.Identity.MaxActive || got.MaxRetained != id.Identity.MaxRetained {
		id.Identity.MaxActive, id.Identity.MaxRetained = got.MaxActive, got.MaxRetained
		if err := writeIdentity(stateDir, id); err != nil {
			return exitError, err
		}
	}
	line, err := json.Marshal(got)
	if err != nil {
		return exitError, err
	}
	fmt.Fprintf(stdout, "%s\n", line)
	return exitOK, nil
}

// readConfiguration reads Core's configuration with the token (which it
// does not consume) and validates it with the installer's parser.
func readConfiguration(ctx context.Context, client *coreClient, token string) (*core.Configuration, error) {
	var raw json.RawMessage
	if err := client.do(ctx, http.MethodGet, "/api/v1/sandbox-node/configuration", token, nil, nil, &raw); err != nil {
		return nil, err
	}
	return core.ParseConfiguration(raw)
}

// newIdentity makes the node's identity: a new node id and a credential of
// 32 random bytes (64 hex).
func newIdentity(cfg *provider.Config, conf *core.Configuration, f registerFlags, caSHA string) *noderoot.NodeIdentity {
	var secret [32]byte
	rand.Read(secret[:])
	id := &noderoot.NodeIdentity{Credential: hex.EncodeToString(secret[:]), CoreURL: f.coreURL, AllowInsecureOrigin: f.insecure}
	id.Identity.NodeID = uuid.NewString()
	id.Identity.InstallationID = cfg.InstallationID
	id.Identity.Provider = cfg.Provider
	id.Identity.DeploymentGeneration = conf.Generation
	id.Identity.SpecificationDigest = conf.SpecificationDigest
	id.Identity.MaxActive, id.Identity.MaxRetained = conf.MaxActive, conf.MaxRetained
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
