//go:build ignore

// Command generate writes the workflow diagrams into this directory.
package main

import (
	"fmt"
	"os"

	"github.com/openagentcore/oac-node-install/diagrams"
	"github.com/openagentcore/oac-node-install/journal/safefile"
)

func main() {
	files, err := diagrams.Files()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for name, text := range files {
		if err := safefile.AtomicWrite(name, []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
