package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// maxToken bounds the token after trimming.
const maxToken = 4096

// readTokenFile reads the enrollment token from a private regular file
// (0600, not a link), at most 4096 characters after trimming.
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
	data, err := io.ReadAll(io.LimitReader(f, maxToken+2))
	if err != nil {
		return "", fmt.Errorf("read the enrollment token file %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" || len(tok) > maxToken || strings.ContainsAny(tok, " \t\r\n\v\f") {
		return "", fmt.Errorf("enrollment token file %s does not hold one token of at most %d characters", path, maxToken)
	}
	return tok, nil
}
