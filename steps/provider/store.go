package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
)

// MaxStorePath is the longest microsandbox store path, in bytes: the
// microVM's Unix socket paths live below it.
const MaxStorePath = 48

// StorePath is an installation's private microsandbox store:
// <home>/.oac/m/<first 12 hex of sha256(installation_id)>.
func StorePath(home, installationID string) (string, error) {
	return storePath(home, installationID)
}

// RuntimeStorePath is the store of a later generation whose runtime or
// firmware differs from the base configuration's:
// <home>/.oac/m/<12 hex of sha256("<id>:<runtime_sha256>:<firmware_sha256>")>.
func RuntimeStorePath(home, installationID, runtimeSHA256, firmwareSHA256 string) (string, error) {
	return storePath(home, installationID+":"+runtimeSHA256+":"+firmwareSHA256)
}

func storePath(home, key string) (string, error) {
	sum := sha256.Sum256([]byte(key))
	p := filepath.Join(home, ".oac", "m", hex.EncodeToString(sum[:])[:12])
	if len(p) > MaxStorePath {
		return "", fmt.Errorf("%w: the microsandbox store %s is %d bytes, at most %d", ErrHomeTooLong, p, len(p), MaxStorePath)
	}
	return p, nil
}
