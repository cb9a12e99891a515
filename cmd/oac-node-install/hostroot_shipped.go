//go:build !crashtest && !testhost

package main

import "github.com/spf13/pflag"

// bindHostRoot adds nothing in the shipped binary: --host-root is refused as
// an unknown flag.
func (c *cli) bindHostRoot(*pflag.FlagSet) {}
