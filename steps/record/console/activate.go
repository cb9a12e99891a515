package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// ActiveName is the active release pointer in the payload directory.
const ActiveName = "active.json"

// activePointer is active.json: {"source_commit": "<rev>"}.
type activePointer struct {
	SourceCommit string `json:"source_commit"`
}

// maxActive bounds active.json; it holds one source commit.
const maxActive = 4096

var activeFormat = strictjson.Format{MaxSize: maxActive}

// ReadActive returns the source commit active.json names, or "" when there
// is no active.json (the payload is then served flat). It is read through
// the safe-file layer: a symbolic link, a FIFO, a device or a file larger
// than 4096 bytes is refused (safefile.ErrUnsafe), never followed or read.
func ReadActive(payloadDir string) (string, error) {
	root, err := safefile.OpenRootTrusted(payloadDir)
	if err != nil {
		return "", fmt.Errorf("read active release: %w", err)
	}
	defer root.Close()
	// Never through a symbolic link, never a FIFO or device, and bounded:
	// an active.json pointing at /dev/zero must not hang the console.
	data, err := root.ReadFile(ActiveName, safefile.Expect{UID: safefile.AnyUID, MaxSize: maxActive})
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read active release: %w", err)
	}
	var p activePointer
	if err := activeFormat.Decode(data, &p); err != nil || !release.IsCommit(p.SourceCommit) {
		return "", fmt.Errorf("read active release: %s does not name a source commit", filepath.Join(payloadDir, ActiveName))
	}
	return p.SourceCommit, nil
}

// Activate makes the published release sourceCommit the active one by
// writing active.json atomically (then fsyncing the directory). An
// active.json already naming sourceCommit is left as it is; one naming
// another release is refused with ErrActiveRelease, as the console's
// installer refuses it: use Switch to move it on purpose. The release's
// manifest.json and SHA256SUMS must be published and verify
// (ErrNotPublished otherwise).
func Activate(payloadDir, sourceCommit string) error {
	return activate(payloadDir, sourceCommit, false)
}

// Switch is Activate that replaces an active.json naming another release.
func Switch(payloadDir, sourceCommit string) error {
	return activate(payloadDir, sourceCommit, true)
}

func activate(payloadDir, sourceCommit string, replace bool) error {
	if !release.IsCommit(sourceCommit) {
		return fmt.Errorf("activate release %q: %w: not a source commit", sourceCommit, ErrNotPublished)
	}
	if err := checkPublishedRelease(payloadDir, sourceCommit); err != nil {
		return fmt.Errorf("activate release %s: %w", sourceCommit, err)
	}
	lock, err := safefile.Lock(filepath.Join(payloadDir, lockName), filePerm)
	if err != nil {
		return fmt.Errorf("activate release %s: %w", sourceCommit, err)
	}
	defer lock.Unlock()
	if err := checkPublishedRelease(payloadDir, sourceCommit); err != nil {
		return fmt.Errorf("activate release %s: %w", sourceCommit, err)
	}
	current, err := ReadActive(payloadDir)
	if err != nil && !replace {
		return fmt.Errorf("activate release %s: %w", sourceCommit, err)
	}
	if current == sourceCommit {
		return nil
	}
	if current != "" && !replace {
		return fmt.Errorf("activate release %s: %w: %s names %s", sourceCommit, ErrActiveRelease, ActiveName, current)
	}
	data, _ := json.Marshal(activePointer{SourceCommit: sourceCommit})
	if err := safefile.AtomicWrite(filepath.Join(payloadDir, ActiveName), append(data, '\n'), filePerm); err != nil {
		return fmt.Errorf("activate release %s: %w", sourceCommit, err)
	}
	return nil
}

// checkPublishedRelease verifies the published metadata of a release.
func checkPublishedRelease(payloadDir, sourceCommit string) error {
	root, err := safefile.OpenRoot(payloadDir)
	if err != nil {
		return err
	}
	defer root.Close()
	exp := safefile.Expect{UID: safefile.AnyUID, MaxSize: release.MaxMetadataSize}
	dir := releasesDir + "/" + sourceCommit + "/"
	mb, err := root.ReadFile(dir+release.ManifestName, exp)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotPublished, err)
	}
	sb, err := root.ReadFile(dir+release.SumsName, exp)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotPublished, err)
	}
	r, err := release.VerifyRelease(mb, sb, release.ProviderDocker)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotPublished, err)
	}
	if r.Manifest.SourceCommit != sourceCommit {
		return fmt.Errorf("%w: its manifest names source commit %s", ErrNotPublished, r.Manifest.SourceCommit)
	}
	return nil
}
