package main

import (
	"context"
	"io"
)

func runGenerationHelper(ctx context.Context, f *installerFlags, stdout, stderr io.Writer) error {
	return errNotImplemented
}
