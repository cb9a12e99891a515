package devcore

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/nodeproto"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// Files of the Core stand-in in the data directory.
const (
	// AdminKeyFileName holds the admin key (0600): the bearer secret of
	// the /core/v1 routes (tokens, nodes, deployment changes).
	AdminKeyFileName = "admin-key"
	// CoreStateFileName holds what survives a restart (0600): the
	// installation id, the provider, the generations and the enrolled
	// nodes (their credentials only as sha256).
	CoreStateFileName = "core-state.json"
)

// TokenLifetime is how long an enrollment token is valid (Web's Add-node
// token).
const TokenLifetime = 10 * time.Minute

// Core is the stand-in for OAC Core's node routes (CONTRACT §2.2). Tokens
// and connections live in memory; the installation, generations and nodes
// are kept in CoreStateFileName, rewritten atomically on every change.
type Core struct {
	dataDir  string
	url      string // public URL: the console origin
	adminKey string
	// publish builds and publishes the Runtime release of a new
	// generation and returns its specification.
	publish func(generation int64, provider string) (*release.Specification, error)
	// now is the clock of token expiry.
	now func() time.Time

	mu          sync.Mutex
	state       coreState
	tokens      map[string]*enrollToken // by sha256 of the token
	conns       map[string]*nodeConn    // by node id
	dropEnrolls int
}

// coreState is CoreStateFileName.
type coreState struct {
	InstallationID string            `json:"installation_id"`
	Provider       string            `json:"provider"`
	Target         int64             `json:"target_generation"`
	Generations    []*generationInfo `json:"generations"`
	Nodes          []*nodeRecord     `json:"nodes"`
	// OwnerEpoch is this Core's ownership epoch, raised at every start and
	// never lowered: the platform's node refuses a welcome whose
	// owner_epoch is below the one it retained (agent.go).
	OwnerEpoch uint64 `json:"owner_epoch"`
}

type generationInfo struct {
	Generation    int64           `json:"generation"`
	Specification json.RawMessage `json:"specification"`
	Digest        string          `json:"specification_digest"`
	Dropped       bool            `json:"dropped"`
	spec          *release.Specification
}

type nodeRecord struct {
	NodeID               string `json:"node_id"`
	CredentialSHA256     string `json:"credential_sha256"`
	Name                 string `json:"name"`
	Provider             string `json:"provider"`
	BackendFingerprint   string `json:"backend_fingerprint"`
	DeploymentGeneration int64  `json:"deployment_generation"`
	SpecificationDigest  string `json:"specification_digest"`
	MaxActive            int64  `json:"max_active"`
	MaxRetained          int64  `json:"max_retained"`
	CoreURL              string `json:"core_url"`

	// In memory: the connection's view.
	connected     bool
	lastHeartbeat time.Time
	health        nodeproto.Health
	observations  []nodeproto.Observation
	serving       int64
}

type enrollToken struct {
	id          string
	expires     time.Time
	maxActive   int64
	maxRetained int64
	used        bool
}

// StoredInstallationID is the installation id the Core state in dataDir
// holds, or a new one when there is none yet (newCore then keeps it).
func StoredInstallationID(dataDir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dataDir, CoreStateFileName))
	if errors.Is(err, os.ErrNotExist) {
		return uuid.NewString(), nil
	}
	if err != nil {
		return "", err
	}
	var st coreState
	if err := json.Unmarshal(data, &st); err != nil {
		return "", fmt.Errorf("read %s: %w", CoreStateFileName, err)
	}
	return st.InstallationID, nil
}

// newCore loads or creates the Core state in dataDir (a new state's
// installation id is id, or a new one when id is ""). The first
// generation runs spec1; when no node is enrolled, a stored first
// generation is replaced by spec1 (the fixture changed with the binaries).
func newCore(dataDir, url, provider, id string, spec1 *release.Specification, publish func(int64, string) (*release.Specification, error)) (*Core, error) {
	c := &Core{dataDir: dataDir, url: url, publish: publish, now: time.Now,
		tokens: map[string]*enrollToken{}, conns: map[string]*nodeConn{}}
	key, err := loadOrCreateSecret(filepath.Join(dataDir, AdminKeyFileName))
	if err != nil {
		return nil, fmt.Errorf("start Core stand-in: %w", err)
	}
	c.adminKey = key
	data, err := os.ReadFile(filepath.Join(dataDir, CoreStateFileName))
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &c.state); err != nil {
			return nil, fmt.Errorf("start Core stand-in: read %s: %w", CoreStateFileName, err)
		}
		for _, g := range c.state.Generations {
			if g.spec, err = release.ParseSpecification(c.state.Provider, g.Specification); err != nil {
				return nil, fmt.Errorf("start Core stand-in: generation %d: %w", g.Generation, err)
			}
		}
	case errors.Is(err, os.ErrNotExist):
		c.state.InstallationID = id
		if id == "" {
			c.state.InstallationID = uuid.NewString()
		}
	default:
		return nil, fmt.Errorf("start Core stand-in: %w", err)
	}
	if len(c.state.Nodes) == 0 || c.state.Provider != provider || len(c.state.Generations) == 0 {
		if len(c.state.Nodes) > 0 {
			return nil, fmt.Errorf("start Core stand-in: its nodes use provider %s, not %s; remove them first", c.state.Provider, provider)
		}
		c.state.Provider = provider
		c.state.Generations = nil
		c.state.Target = 0
		if _, err := c.addGeneration(spec1); err != nil {
			return nil, fmt.Errorf("start Core stand-in: %w", err)
		}
	}
	for _, n := range c.state.Nodes {
		n.serving = n.DeploymentGeneration
	}
	c.state.OwnerEpoch++
	if err := c.save(); err != nil {
		return nil, fmt.Errorf("start Core stand-in: %w", err)
	}
	return c, nil
}

// addGeneration makes spec the next generation and the target. Called
// with c.mu held (or before the Core is shared).
func (c *Core) addGeneration(spec *release.Specification) (*generationInfo, error) {
	raw, err := spec.MarshalJSON()
	if err != nil {
		return nil, err
	}
	g := &generationInfo{Generation: c.state.Target + 1, Specification: raw, Digest: spec.Digest(), spec: spec}
	c.state.Generations = append(c.state.Generations, g)
	c.state.Target = g.Generation
	return g, nil
}

// save writes the state atomically. Called with c.mu held.
func (c *Core) save() error {
	data, err := json.MarshalIndent(&c.state, "", "  ")
	if err != nil {
		return err
	}
	return safefile.AtomicWrite(filepath.Join(c.dataDir, CoreStateFileName), append(data, '\n'), 0o600)
}

func (c *Core) generation(g int64) *generationInfo {
	for _, gi := range c.state.Generations {
		if gi.Generation == g {
			return gi
		}
	}
	return nil
}

func (c *Core) target() *generationInfo { return c.generation(c.state.Target) }

func (c *Core) node(id string) *nodeRecord {
	for _, n := range c.state.Nodes {
		if n.NodeID == id {
			return n
		}
	}
	return nil
}

// InstallationID is the installation the stand-in serves.
func (c *Core) InstallationID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state.InstallationID
}

// Provider is the provider of the installation's nodes.
func (c *Core) Provider() string { c.mu.Lock(); defer c.mu.Unlock(); return c.state.Provider }

// AdminKey is the bearer secret of the /core/v1 routes.
func (c *Core) AdminKey() string { return c.adminKey }

// DropNextEnrollResponses makes the next n successful enrollments take
// effect and then close the connection without an answer, as a lost
// response does.
func (c *Core) DropNextEnrollResponses(n int) { c.mu.Lock(); c.dropEnrolls = n; c.mu.Unlock() }

// SetClock replaces the clock of token expiry (tests).
func (c *Core) SetClock(now func() time.Time) { c.mu.Lock(); c.now = now; c.mu.Unlock() }

// Enrollments is how many nodes enrolled and are not removed.
func (c *Core) Enrollments() int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.state.Nodes) }

// newSecret returns 32 random bytes as 64 hex digits.
func newSecret() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func equalSecret(hash, secret string) bool {
	return subtle.ConstantTimeCompare([]byte(hash), []byte(sha256Hex(secret))) == 1
}

// loadOrCreateSecret reads a secret file, or writes a new secret there
// (0600).
func loadOrCreateSecret(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err == nil {
		s := strings.TrimSpace(string(data))
		if len(s) < 32 {
			return "", fmt.Errorf("%s holds no key", path)
		}
		return s, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	s := newSecret()
	if err := safefile.AtomicWrite(path, []byte(s+"\n"), 0o600); err != nil {
		return "", err
	}
	return s, nil
}
