package noderoot

import (
	"context"
	"io"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/host/microsandbox"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// Data is what the steps see of the node and the run: the narrow accessor
// (kubeadm's phases/join/data.go). Env implements it; tests stub it.
type Data interface {
	// Identity is the generation the run is bound to.
	Identity() lease.Identity
	// Node is the node root's layout.
	Node() layout.Node
	// Root is the node root, opened so that nothing below it is reached
	// through a symbolic link.
	Root() *safefile.Root
	// Home is the service account's home, where microsandbox stores are.
	Home() string
	// UID is the node account, owner of every file of the node.
	UID() int
	// Locked reports whether this process holds the node's install.lock,
	// and whether it holds the generation's lease exclusively.
	Locked() (install, lease bool)
	// LeaseExists reports whether the generation's lease file exists.
	LeaseExists() (bool, error)
	// InitializeLease creates the generation's lease and its identity and
	// holds it exclusively for the rest of the run.
	InitializeLease() error
	// Base is the node's base provider.json.
	Base() (*provider.Config, error)
	// Specification is the generation's specification, read from Core's
	// authenticated configuration route and checked against the digest
	// the run is bound to.
	Specification(ctx context.Context) (*release.Specification, error)
	// Release is the verified metadata of a release, from the console
	// (failures are *ArtifactError).
	Release(ctx context.Context, sourceCommit string) (*Metadata, error)
	// FetchReleaseFile reads one fixed file of a release from the console
	// (runtime/seccomp.json); failures are *ArtifactError.
	FetchReleaseFile(ctx context.Context, sourceCommit, name string) ([]byte, error)
	// Download publishes one verified artifact of a release: req.URL holds
	// the artifact's released file name, which becomes its versioned
	// console URL. Transfer failures are *ArtifactError.
	Download(ctx context.Context, sourceCommit string, req download.Request) error
	// Docker is the Docker Engine of the node's configuration.
	Docker(ctx context.Context) (Docker, error)
	// Microsandbox drives msb for one store.
	Microsandbox(msb, store, firmware string) Microsandbox
	// Logf reports progress to the node program's log.
	Logf(format string, args ...any)
}

// Docker is the part of the Docker Engine the steps use: inspect and load.
// Nothing here removes or prunes an image.
type Docker interface {
	// ImageInspect returns the local ID and platform of the image ref
	// names; an image the engine lacks is an error with a NotFound method.
	ImageInspect(ctx context.Context, ref string) (id, os, arch string, err error)
	// ImageLoadReader loads the image archive r streams, which may be
	// gzip-compressed (docker load); name says what r is in errors. A
	// read error of r fails the load.
	ImageLoadReader(ctx context.Context, r io.Reader, name string) error
}

// Microsandbox is the part of msb the steps use, for one store.
type Microsandbox interface {
	VerifyImage(ctx context.Context, ref microsandbox.Reference) error
	LoadImage(ctx context.Context, archive string, ref microsandbox.Reference) error
	ListImages(ctx context.Context) (*microsandbox.Inventory, error)
	RemoveImage(ctx context.Context, inv *microsandbox.Inventory, ref microsandbox.Reference) (bool, error)
	Sandboxes(ctx context.Context) (int, error)
}

// Metadata is a release's verified metadata with the exact bytes it was
// verified from, which the node keeps as copies.
type Metadata struct {
	Release  *release.Release
	Manifest []byte // manifest.json as served
	Sums     []byte // SHA256SUMS as served
}
