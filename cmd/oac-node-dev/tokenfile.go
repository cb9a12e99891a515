package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

// readTokenFile reads the enrollment token from a private regular file
// (0600, not a link): after trimming, one token by ident.CheckToken.
func readTokenFile(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("open the enrollment token file %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("enrollment token file %s: %w", path, err)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
		return "", fmt.Errorf("enrollment token file %s must be a regular file of mode 0600", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, ident.MaxTokenLength+2))
	if err != nil {
		return "", fmt.Errorf("read the enrollment token file %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(data))
	if err := ident.CheckToken(tok); err != nil {
		return "", fmt.Errorf("enrollment token file %s: %w", path, err)
	}
	return tok, nil
}
