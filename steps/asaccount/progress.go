package asaccount

import (
	"io"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/host/privsep"
)

// Log is the log of a Server's steps in the child: each line written to
// it is a progress line to the parent.
func Log(c *privsep.Child) io.Writer { return progressWriter{c} }

// progressWriter turns log lines into the child's progress lines.
type progressWriter struct{ c *privsep.Child }

func (p progressWriter) Write(b []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if line != "" {
			p.c.Progress(line)
		}
	}
	return len(b), nil
}
