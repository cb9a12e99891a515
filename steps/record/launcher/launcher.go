package launcher

import (
	"archive/zip"
	"bytes"
	"sync"
	"time"
)

// MainPy is the archive's __main__.py. It imports only modules built into
// the interpreter and runs under every Python 3.
const MainPy = `# generation-preparer.pyz: the platform's node program runs the retained
# generation helper through this archive as
#     python3 <node root>/generation-preparer.pyz ARGUMENTS...
# It replaces this process with <node root>/generation-preparer ARGUMENTS...
# (same process, process group, standard streams and exit status).
import os
import signal
import sys


def main():
    here = os.path.dirname(os.path.abspath(sys.argv[0]))
    helper = os.path.join(here, "generation-preparer")
    # Python ignores SIGPIPE and SIGXFSZ; an ignored signal stays ignored
    # across exec. The helper starts with their default action.
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execv(helper, [helper] + sys.argv[1:])
    except OSError as e:
        sys.stderr.write("generation-preparer.pyz: cannot run %s: %s\n" % (helper, e.strerror or e))
        sys.exit(1)


main()
`

// modified is every entry's time: the earliest a zip's MS-DOS time holds.
var modified = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// MaxSize bounds the retained launcher when it is read back.
const MaxSize = 64 << 10

var (
	once  sync.Once
	built []byte
)

// Bytes is the launcher archive. The slice is shared: callers must not
// change it.
func Bytes() []byte {
	once.Do(func() { built = build() })
	return built
}

func build() []byte {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "__main__.py", Method: zip.Store, Modified: modified}
	h.SetMode(0o644)
	f, err := w.CreateHeader(h)
	if err == nil {
		_, err = f.Write([]byte(MainPy))
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		// Writing a fixed entry to memory cannot fail.
		panic("build the generation helper launcher: " + err.Error())
	}
	return buf.Bytes()
}
