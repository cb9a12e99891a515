package main

import (
	"context"
	"io"
)

func runLeases(ctx context.Context, args []string, stdout io.Writer) error {
	return errNotImplemented
}
