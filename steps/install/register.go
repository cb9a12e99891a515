package install

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// RegisterRequest is one `oac-node register` call (CONTRACT §4.3).
type RegisterRequest struct {
	Program   string // absolute path of native/bin/oac-node
	Config    string // absolute provider.json
	StateDir  string // absolute state/node
	CoreURL   string // Core's origin
	Name      string // the node's display name (the host name)
	TokenFile string // the private temporary file holding the token
	// AllowInsecureOrigin and CoreCA are passed on when set.
	AllowInsecureOrigin bool
	CoreCA              string
}

// Registrar registers the node with Core through the node program.
// Rejections are *RegistrationRejected.
type Registrar interface {
	Register(ctx context.Context, req RegisterRequest) error
}

// RegistrationRejected is Core's refusal of the enrollment, as the node
// program's rejection line reports it. Status 401 also stands for the node
// program's exit status 78.
type RegistrationRejected struct {
	Status int
	Code   string // lowercase code, may be empty
}

// CodeAddressMismatch: Core's public URL is not the one the node was given;
// the token stays unused.
const CodeAddressMismatch = "sandbox_node_address_mismatch"

func (e *RegistrationRejected) Error() string {
	switch {
	case e.Code == CodeAddressMismatch:
		return "Core's public URL changed, so the enrollment token was not used: generate a new command in Web and run it"
	case e.Status == 401:
		return "the enrollment command expired or was already used: generate a new command in Web"
	case e.Code != "":
		return fmt.Sprintf("the registration was not confirmed: Core answered HTTP %d %s", e.Status, e.Code)
	}
	return fmt.Sprintf("the registration was not confirmed: Core answered HTTP %d", e.Status)
}

// rejectionLine is the node program's machine-read rejection line, in
// the shapes the platform's node program prints it (CONTRACT §11;
// services/core/internal/sandbox/node/enrollment.go enrollmentRejection,
// printed whole by services/core/cmd/sandbox-node/main.go):
//
//	node enrollment rejected (HTTP <status>)
//	node enrollment rejected (HTTP <status> <code>)       code ^[a-z_]{1,64}$
//	node enrollment rejected (HTTP 401[ <code>]): <error text>
//
// Only the status and the code are taken; the text after ": " and every
// other line of the program's stderr are never shown to the operator.
var rejectionLine = regexp.MustCompile(`(?m)^node enrollment rejected \(HTTP ([1-5][0-9]{2})(?: ([a-z_]{1,64}))?\)(?:: [^\n]*)?\s*$`)

// parseRejection finds the rejection line in the node program's stderr.
func parseRejection(stderr []byte) (*RegistrationRejected, bool) {
	m := rejectionLine.FindSubmatch(stderr)
	if m == nil {
		return nil, false
	}
	status, _ := strconv.Atoi(string(m[1]))
	return &RegistrationRejected{Status: status, Code: string(m[2])}, true
}

// NodeProgram runs the node root's native/bin/oac-node. The token reaches
// it only as a file name; the program's other output is never echoed.
type NodeProgram struct{}

// Register implements Registrar.
func (NodeProgram) Register(ctx context.Context, req RegisterRequest) error {
	args := []string{"register", "--config", req.Config, "--state-dir", req.StateDir, "--core-url", req.CoreURL,
		"--name", req.Name, "--enrollment-token-file", req.TokenFile}
	if req.AllowInsecureOrigin {
		args = append(args, "--allow-insecure-origin")
	}
	if req.CoreCA != "" {
		args = append(args, "--core-ca", req.CoreCA)
	}
	cmd := exec.CommandContext(ctx, req.Program, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err := cmd.Run()
	if err == nil {
		return nil
	}
	if rej, ok := parseRejection(stderr.Bytes()); ok {
		return rej
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 78 {
		return &RegistrationRejected{Status: 401}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("the node program could not register the node (%v); see its log with the same command rerun", err)
}

// recoveryToken stands in the token file of a rerun without a token that
// finishes an interrupted registration: the node program sends it to Core
// only if Core does not know the identity it wrote, and Core then refuses
// it (HTTP 401: "generate a new command in Web").
const recoveryToken = "no-token-confirm-the-written-identity"

// registerStep registers the node with Core through the node program,
// with the token in a private temporary file that is removed in every
// outcome, and writes registered.json (installation.json's bytes) only
// after success. A registered node needs no token. Core's refusal of the
// address (the token stays unused) discards the unregistered state —
// installation.json, provider.json and state/node — and keeps downloads.
type registerStep struct {
	e *NodeEnv
}

// Token is the enrollment token of the run, read by root from standard
// input and handed to the child over its request pipe.
func (e *NodeEnv) Token() string { return e.token }

func (s registerStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	e := s.e
	inst, err := e.ReadPrivate(layout.InstallationFile, 4096)
	if err != nil {
		return workflow.Result{}, err
	}
	if reg, err := e.ReadPrivate(layout.RegisteredFile, 4096); err == nil {
		if !noderoot.SameRecord(reg, inst) {
			return workflow.Result{}, noderoot.Refusal("This node is registered for another deployment: remove it in Web, run --uninstall, then add it again with a new command", fmt.Errorf("registered.json differs from installation.json"))
		}
		return workflow.Result{}, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return workflow.Result{}, err
	}
	token := e.token
	if token == "" {
		// An interrupted registration (identity.json written, the answer
		// lost): the node program confirms the identity with Core first
		// and enrolls only when Core does not know it, which then needs a
		// valid token. Its command line requires a token file.
		if _, err := os.Lstat(e.Node().Identity()); err != nil {
			return workflow.Result{}, errors.New("this node is not registered yet and the command gave no enrollment token; run the command Web generated, which passes it on standard input")
		}
		e.Logf("finish the interrupted registration (the node program confirms the node with Core)")
		token = recoveryToken
	}
	tokenFile, err := writeTokenFile(e, token)
	if err != nil {
		return workflow.Result{}, err
	}
	defer os.Remove(tokenFile)
	host, _ := os.Hostname()
	req := RegisterRequest{
		Program: filepath.Join(e.Node().Root, release.PathNode), Config: e.Node().ProviderConfig(), StateDir: e.Node().StateDir(),
		CoreURL: noderoot.TrimOrigin(e.in.CoreOrigin), Name: host, TokenFile: tokenFile, AllowInsecureOrigin: e.in.AllowInsecureOrigin,
	}
	if len(e.in.CoreCA) > 0 {
		req.CoreCA = filepath.Join(e.Node().Root, layout.CoreCAFile)
	}
	reg := e.in.Register
	if reg == nil {
		reg = NodeProgram{}
	}
	e.Logf("register the node with Core")
	err = reg.Register(ctx, req)
	if rmErr := os.Remove(tokenFile); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		err = errors.Join(err, fmt.Errorf("remove the token file: %w", rmErr))
	}
	var rej *RegistrationRejected
	if errors.As(err, &rej) && rej.Code == CodeAddressMismatch {
		if derr := discardUnregistered(ctx, e); derr != nil {
			return workflow.Result{}, errors.Join(err, derr)
		}
		return workflow.Result{}, err
	}
	if err != nil {
		return workflow.Result{}, err
	}
	if err := noderoot.PublishRecord(e.Root(), layout.RegisteredFile, inst, 0o600); err != nil {
		if errors.Is(err, safefile.ErrConflict) {
			return workflow.Result{}, fmt.Errorf("registered.json: %w", err)
		}
		return workflow.Result{}, err
	}
	return workflow.Result{}, nil
}

// Verify: registered.json exists (done) or not (run again: the node
// program recovers a lost enrollment answer under the identity it wrote
// before enrolling, so a second registration never enrolls twice).
func (s registerStep) Verify(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	if _, err := os.Lstat(s.e.Node().Registered()); err == nil {
		return workflow.Done, workflow.Result{}, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return workflow.Unknown, workflow.Result{}, err
	}
	if err := removeTokenFiles(s.e); err != nil {
		return workflow.Unknown, workflow.Result{}, err
	}
	return workflow.NotDone, workflow.Result{}, nil
}

// writeTokenFile writes the token to a new private file in the node root
// (created exclusively, 0600, never through a link) and returns its path.
func writeTokenFile(e *NodeEnv, token string) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	p := filepath.Join(e.Node().Root, tokenFilePrefix+hex.EncodeToString(b[:]))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return "", fmt.Errorf("create the token file: %w", err)
	}
	_, err = f.WriteString(token + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p)
		return "", fmt.Errorf("write the token file: %w", err)
	}
	return p, nil
}

// discardUnregistered removes what binds an unregistered node to the Core
// address that refused it, keeping the downloads.
func discardUnregistered(ctx context.Context, e *NodeEnv) error {
	var errs []error
	for _, rel := range []string{layout.InstallationFile, layout.ProviderConfigFile, layout.NodeIdentityFile} {
		if err := e.Root().Remove(rel); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	// The network the network step made for the node goes too: a node
	// that never registered ran no sandbox in it, and the new command's
	// preflight would take it for another node's.
	if e.base.Docker != nil {
		n, name, err := networkStep{e}.networks(ctx)
		if err == nil {
			var found bool
			if found, err = networkExists(ctx, n, name, e.in.InstallationID, e.in.UnlabelledNetwork); err == nil && found {
				e.Logf("remove the Docker network %s", name)
				err = n.NetworkRemove(ctx, name)
			}
		}
		if err != nil && !errors.Is(err, docker.ErrNotFound) {
			errs = append(errs, fmt.Errorf("remove the node's Docker network: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Check: registered.json exists with installation.json's bytes; other
// bytes refuse.
func (s registerStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	// A record that is there but not a private regular file of the
	// account's (a link, a device, too large) is refused here, before the
	// workflow writes anything, not when the register step meets it.
	const hostile = "The node's registration record is not as the installer left it; inspect it"
	reg, err := e.ReadPrivate(layout.RegisteredFile, 4096)
	if errors.Is(err, os.ErrNotExist) {
		return notDone, workflow.Result{}, nil
	}
	if err != nil {
		return 0, workflow.Result{}, noderoot.Refusal(hostile, err)
	}
	inst, err := e.ReadPrivate(layout.InstallationFile, 4096)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, workflow.Result{}, noderoot.Refusal(hostile, err)
	}
	if !noderoot.SameRecord(reg, inst) {
		return 0, workflow.Result{}, noderoot.Refusal("This node is registered for another deployment: remove it in Web, run --uninstall, then add it again with a new command", fmt.Errorf("registered.json differs from installation.json"))
	}
	// A registered node without its identity has lost its credential: it
	// can neither reach Core nor be confirmed removed.
	if _, err := os.Lstat(e.Node().Identity()); errors.Is(err, os.ErrNotExist) {
		return 0, workflow.Result{}, noderoot.Refusal("Remove the node in Web, run this command with --uninstall --force, then add the node again with a new command",
			fmt.Errorf("registered.json is there but state/node/identity.json, the node's credential, is gone"))
	} else if err != nil {
		return 0, workflow.Result{}, noderoot.Refusal(hostile, err)
	}
	return done, workflow.Result{}, nil
}
