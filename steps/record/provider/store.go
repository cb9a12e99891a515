package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// ErrHomeTooLong: the microsandbox store path would exceed MaxStorePath
// bytes.
var ErrHomeTooLong = errors.New("HOME is too long")

// MaxStorePath is the longest store path, in bytes: microsandbox places
// Unix sockets under it.
const MaxStorePath = 48

// StorePath is the installation's store: <home>/.oac/m/<first 12 hex of
// sha256(installation_id)>. A path over 48 bytes is ErrHomeTooLong.
func StorePath(home string, installationID ident.InstallationID) (string, error) {
	return storeIn(home, string(installationID))
}

// GenerationStorePath is the store of a later generation whose runtime or
// firmware hashes differ from the installation's:
// <home>/.oac/m/<first 12 hex of
// sha256("<installation_id>:<runtime_sha256>:<firmware_sha256>")>.
func GenerationStorePath(home string, installationID ident.InstallationID, runtimeSHA256, firmwareSHA256 string) (string, error) {
	return storeIn(home, string(installationID)+":"+runtimeSHA256+":"+firmwareSHA256)
}

// SelectStore picks the store of a generation: the installation's store
// when its runtime and firmware hashes equal the base configuration's, the
// generation form otherwise.
func SelectStore(home string, installationID ident.InstallationID, baseRuntime, baseFirmware, runtimeSHA256, firmwareSHA256 string) (string, error) {
	if runtimeSHA256 == baseRuntime && firmwareSHA256 == baseFirmware {
		return StorePath(home, installationID)
	}
	return GenerationStorePath(home, installationID, runtimeSHA256, firmwareSHA256)
}

func storeIn(home, key string) (string, error) {
	if !filepath.IsAbs(home) {
		return "", fmt.Errorf("microsandbox store: home %q is not absolute", home)
	}
	sum := sha256.Sum256([]byte(key))
	p := filepath.Join(home, layout.MicrosandboxStoresRel, hex.EncodeToString(sum[:])[:12])
	if len(p) > MaxStorePath {
		return "", fmt.Errorf("%w: the microsandbox store %s is %d bytes, at most %d", ErrHomeTooLong, p, len(p), MaxStorePath)
	}
	return p, nil
}
