// Package privsep runs the installer's service-account work in a child
// process as oac-node, and relays what that child prints to the terminal only
// through a terminal-control sanitizer.
//
// Root prepares only the account, group, unit, env file and its own
// records; everything in the node account's home runs in a child. At start
// the installer captures its own executable (Capture) into a sealed memfd,
// so root never executes a file the service account can write: every child
// is executed from that sealed copy, and the service account writes its own
// retained generation helper from the same bytes (Child.Executable). Run
// starts a child for one role with the account's credentials, its own
// session (and so its own process group), stdin /dev/null, SIGKILL as its
// parent death signal, and a fixed environment plus the six normalized
// proxy variables (ChildEnv), forked from a thread of its own that has
// joined a new anonymous session keyring given to the account, forbids new
// privileges and has marked root's descriptors close-on-exec; the thread
// ends with the child, so root's other threads never carry those settings.
// The child sets umask 077, refuses to run as root, makes itself not
// dumpable, checks that it may not gain privileges and that its session
// keyring is its own user's, checks its credentials against the parent's
// request and calls the role's Handler (ServeChild). One exec starts it. A
// Session (Start, Call, Close) keeps one child serving a series of requests
// for its role, each answered as Run answers its one: the service-account
// steps of an installation or an uninstallation share one
// (steps/asaccount's Children), while status starts one per read.
//
// No other process of the service account can reach into a child: the
// sealed copy is executable but not readable by the account (mode 0711), so
// the kernel starts every child not dumpable, and the child makes sure of
// it again; pidfd_getfd, ptrace and /proc/<pid>/mem are refused to the
// account. A descriptor root was started with and passed on without
// close-on-exec (`oac-node-install status 7</etc/shadow`) is closed by the
// child's execve: the forking thread marked it close-on-exec.
//
//	parent (root)                             child (oac-node)
//	Capture ─ sealed memfd ─ execve ────────▶ ServeChild: umask, harden,
//	Run ── fd 4: envelope (ids, request) ───▶   check ids, Handler
//	    ── fd 5: the sealed copy, read-only ─▶  Child.Executable
//	    ◀─ fd 3: phase/line …, result|error ──  Child.Phase/Progress
//	    ◀─ stdout, stderr ── Sanitize ─▶ terminal
//	    ── SIGTERM, then SIGKILL, to the group on SIGINT/SIGHUP/SIGTERM
//
// The child is started as [oac-node-install, __privsep-child, role]
// (ChildCommand), a hidden invocation that only works with the parent's
// pipes. The request travels on its own pipe, never in arguments or the
// environment, because it can carry the enrollment token. Messages on the
// result pipe are newline-delimited JSON objects: any number of
// {"type":"phase","text":…} and {"type":"line","text":…}, then one
// {"type":"result","result":…} or {"type":"error","class":…,"text":…}. An
// error's class (transfer, refused, internal) comes from the handler's error
// type, never from its text.
//
// SIGINT, SIGHUP and SIGTERM to the parent (each unless the process was
// started ignoring it, as under nohup; the child then inherits and keeps
// ignoring it too), or the end of Run's context, stop the child and everything it started in its process group: SIGTERM to
// the group, SIGKILL after a grace period, and Run returns ErrInterrupted.
// A process the child started that left the group on purpose (a daemon with
// its own session) is outside that reach, and the parent death signal
// reaches only the child itself.
//
// Root's own locks (the host's instance lock) are never passed to a child:
// a process of the service account holding a descriptor of root's lock
// could release it for everyone (LOCK_UN acts on the shared open file
// description) or keep it held for ever. What a child starts under a lock
// of the service account's own inherits that lock instead (the generation
// helper's msb calls under the node's install.lock, microsandbox.CLI.Inherit).
package privsep
