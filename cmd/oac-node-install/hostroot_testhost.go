//go:build crashtest || testhost

package main

import "github.com/spf13/pflag"

// bindHostRoot adds the hidden --host-root flag: test builds only (the
// crashtest and testhost tags), so that tests and the bench can run the
// command against a host laid out in a directory.
func (c *cli) bindHostRoot(fs *pflag.FlagSet) {
	fs.StringVar(&c.hostRoot, flagHostRoot, c.hostRoot, "root of the host's paths (test builds only)")
	fs.MarkHidden(flagHostRoot)
}
