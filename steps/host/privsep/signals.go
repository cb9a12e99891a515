package privsep

import (
	"os"
	"os/signal"
	"syscall"
)

// InterruptSignals are the signals that interrupt a run: SIGINT, SIGHUP and
// SIGTERM, leaving out each one the process was started with ignored. A run
// started under nohup ignores SIGHUP and must keep ignoring it: listening
// for it (signal.Notify) would end the ignoring for this process, and for
// every child it starts, which inherits an ignored signal but not a handled
// one. Call it before any signal.Notify of these signals.
func InterruptSignals() []os.Signal {
	var sigs []os.Signal
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	return sigs
}
