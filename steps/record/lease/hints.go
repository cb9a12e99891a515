package lease

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

// nextSteps returns the checks and commands an operator runs next for a
// stuck generation, most immediate first. No step ever removes or replaces
// a lease or its identity record: they are the evidence the node and the
// collector refuse on.
//
// Every path named is in the node account's tree, and the advice is read
// on root's terminal: the commands it names only read (`cat -v`, so that
// no byte the account wrote reaches the terminal as a control), or run as
// the node account without a terminal; none changes a file there as root,
// whose chown, chmod or rm would follow a link the account put on the
// path. What the account wrote (a refused record's keys) is shown beside
// the advice, never in it.
func nextSteps(dir string, r *GenerationReport, installationID ident.InstallationID) []string {
	g := r.Generation
	lease := r.Lease.Path
	ident := filepath.Join(dir, identityName(g))
	all := filepath.Join(dir, strconv.FormatInt(g, 10)) + ".*"
	id := string(installationID)
	unit := "oac-node-<installation-id>"
	if id != "" {
		unit = "oac-node-" + id
	}
	logs := fmt.Sprintf("journalctl -u %s -n 200 --no-pager | grep -i 'generation %d'", unit, g)
	grepLocks := "grep ' " + r.Lease.LockKey + " ' /proc/locks"
	if r.Lease.LockKey == "" {
		grepLocks = "cat /proc/locks"
	}
	reinstall := fmt.Sprintf("if the node must serve generation %d, remove the node in Web, run `sudo oac-node-install --uninstall --installation-id %s`, then add it again with a new command from Web", g, orPlaceholder(id))

	var next []string
	add := func(format string, args ...any) { next = append(next, fmt.Sprintf(format, args...)) }

	switch r.Lease.State {
	case StateIdentityMissing:
		add("Check `ls -li %s*`: the lease exists without its identity record, an initialization interrupted before the identity became durable; both the node and the collector refuse it and never re-adopt it.", lease)
		add("Check `%s`: no process may hold the lease; a holder listed here is an unexpected helper — see `ps -o pid,etime,args -p <pid>`.", grepLocks)
		add("Keep %s as it is (it is never re-created or removed); %s.", lease, reinstall)
	case StateMismatch:
		add("Compare `cat -v %s` with `cat -v %s`: %s.", ident, strings.TrimSuffix(all, "*")+"{preparing,collecting,dropped}", r.Lease.Reason)
		add("The lease belongs to another installation, generation or specification and is refused; keep both files for inspection; %s.", reinstall)
	case StateInodeReplaced:
		add("Check `ls -li %s` against the inode in `cat -v %s`: %s.", lease, ident, r.Lease.Reason)
		if r.Lease.Identity != nil {
			add("Check `grep ':%d ' /proc/locks`: a helper may still hold the original lease inode; wait until `ps -o pid,etime,args -p <pid>` shows it exited.", r.Lease.Identity.Inode)
		}
		add("Find what replaced the lease (`stat %s`); the replaced lease is refused even when its metadata agree; %s.", lease, reinstall)
	case StateUnsafe:
		add("Check `ls -li %s %s` and `stat -c '%%F %%h links, uid %%u, mode %%a' %s`: %s.", lease, ident, refusedFile(&r.Lease, ident), r.Lease.Reason)
		add("%s", unsafeRemedy(&r.Lease, ident, reinstall))
	case StateMalformed:
		// The reason may quote the account's keys: it is shown beside.
		add("Check `cat -v %s`: the identity record is refused (why is shown with the lease); it must hold exactly installation_id, generation, specification_digest, device and inode.", ident)
		add("The generation is refused while its identity is unreadable; keep the file for inspection; %s.", reinstall)
	case StateAbsent:
		switch {
		case errors.Is(r.Lease.refusal, ErrLeaseMissing):
			add("Check `ls -li %s`: the identity record remains but the lease was removed; the lease is never re-created and the generation is refused.", all)
			add("Keep %s for inspection; %s.", ident, reinstall)
		case r.Records.Prepared || r.Records.Preparing || r.Records.Collecting:
			add("Check `ls -li %s`: generation %d has records but no lease, so no helper can start and collection refuses it.", all, g)
			add("Check `%s` for the preparation that should have created the lease; %s.", logs, reinstall)
		}
	}

	// A shared holder is a native helper serving the generation: the
	// normal state of a generation in use, not a stuck one. It is named
	// only beside another reason to look. A holder is named by its pid
	// only: its command is the account's text, shown apart with the
	// holders, never inside advice an operator follows.
	before, sharedOnly := len(next), true
	for _, h := range r.Holders {
		sharedOnly = sharedOnly && h.Mode == ModeShared && !h.Waiting
		switch {
		case h.Waiting:
			add("PID %d waits for the lease %s; check `ps -o pid,etime,args -p %d`.", h.PID, h.Mode, h.PID)
		case h.Mode == ModeShared:
			add("PID %d holds the lease shared: a native helper is running; collection and repair retry after it exits. Check `ps -o pid,etime,args -p %d` and `pstree -p %d`.", h.PID, h.PID, h.PID)
		case r.Records.Preparing:
			add("PID %d holds the lease exclusively: the generation's preparation is running (each attempt has a 30-minute deadline). Check `ps -o pid,etime,args -p %d`.", h.PID, h.PID)
		default:
			add("PID %d holds the lease exclusively: a collection or repair is running (collection has a 2-minute timeout). Check `ps -o pid,etime,args -p %d`.", h.PID, h.PID)
		}
	}

	rs := r.Records
	for _, p := range rs.Problems {
		add("Check `ls -li %s` and `cat -v %s` (why is shown with the record); the record is refused until it is a private 0600 file of the node account with its exact keys.", p.Path, p.Path)
	}
	switch {
	case rs.Dropped && (rs.Preparing || rs.Collecting && !rs.NativeComplete):
		add("Generation %d is dropped yet still has a preparation plan or unfinished collection journal (`ls -li %s`); a dropped generation is never prepared again; report this with `%s`.", g, all, logs)
	case rs.Dropped:
		// Collected: configuration and journals stay as receipts.
	case rs.Collecting && !rs.NativeComplete:
		add("Collection of generation %d stopped before native removal completed; native bytes are kept. It resumes only on a fresh drop grant from Core; check the refusal with `%s` (look for an incomplete inventory or an active helper).", g, logs)
	case rs.Collecting:
		add("Native removal of generation %d completed but release files and the dropped marker are pending; a fresh drop grant from Core resumes it; check `%s`.", g, logs)
	case rs.Preparing && rs.Prepared:
		add("Generation %d's final configuration is published but its plan (`cat -v %s`) is not cleared; the next preparation revalidates the same plan and identity and clears it; check `%s`.", g, filepath.Join(dir, preparingName(g)), logs)
	case rs.Preparing && rs.ImportStarted:
		add("An image import for generation %d may have started; the next preparation revalidates the same plan (`cat -v %s`), and plan, specification or path drift refuses; check `%s`.", g, filepath.Join(dir, preparingName(g)), logs)
	case rs.Preparing:
		add("Generation %d is planned but no import started (downloads may be pending); the node retries with backoff up to 30 minutes; check `%s`.", g, logs)
	case !rs.Prepared && !rs.Base && r.Lease.State == StateOK && len(r.Holders) == 0:
		add("Generation %d has a lease but no plan or configuration: preparation has not started or stopped before its plan; the node prepares it when Core asks; check `%s`.", g, logs)
	}
	if before == 0 && sharedOnly && len(next) == len(r.Holders) {
		return nil
	}
	return next
}

func orPlaceholder(id string) string {
	if id == "" {
		return "<installation-id>"
	}
	return id
}

// refusedFile is the file an unsafe report refuses: the lease or its
// identity record.
func refusedFile(lr *LeaseReport, ident string) string {
	if lr.refusedIdentity {
		return ident
	}
	return lr.Path
}

// asNodeAccount is cmd run as the node account in a transient service,
// without a terminal: a process of the account never gets root's terminal,
// where it could inject input (TIOCSTI) or read what is typed.
func asNodeAccount(cmd string) string {
	return "sudo systemd-run --uid=oac-node --wait --quiet --collect " + cmd
}

// unsafeRemedy is the next step for an unsafe lease or identity record, by
// the sentinel of its refusal. The file lies in the node account's tree:
// the account owns every directory on its path and can point the path at
// any file on the host (/etc/shadow) between two commands, so root changes
// nothing there on a hint. The recovery is the installer's own: the
// generation stays refused, and a node that must serve it is removed and
// added again (reinstall).
func unsafeRemedy(lr *LeaseReport, ident, reinstall string) string {
	file := refusedFile(lr, ident)
	keep := "Keep it for inspection (root changes nothing in the node account's tree on a hint: the account can point any path there at any file on the host); the generation stays refused; " + reinstall + "."
	switch err := lr.refusal; {
	case errors.Is(err, ErrSymlink):
		return fmt.Sprintf("A symbolic link stands at %s or a directory above it; it is never followed. See where it points with `ls -l %s` and who made it with `stat %s`. %s", file, file, file, keep)
	case errors.Is(err, ErrHardLinked):
		return fmt.Sprintf("%s has another name, through which it can be changed; find it with `find / -xdev -samefile %s` (read only). %s", file, file, keep)
	case errors.Is(err, ErrForeignOwner):
		return fmt.Sprintf("%s belongs to another account than the node's; see whose with `stat -c '%%U, uid %%u' %s`. Root does not change its owner back. %s", file, file, keep)
	case errors.Is(err, ErrUnsafeMode):
		return fmt.Sprintf("After confirming with `ls -i %s` that the inode equals the one in `cat -v %s`, have the node account, which owns the file, restore its mode: `%s`; the generation is refused until then.", lr.Path, ident, asNodeAccount("chmod 600 "+file))
	default:
		return fmt.Sprintf("Check `file %s`: the node expects a private regular file there. %s", file, keep)
	}
}
