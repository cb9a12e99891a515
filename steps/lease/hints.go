package lease

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// nextSteps returns the checks and commands an operator runs next for a
// stuck generation, most immediate first. No step ever removes or replaces
// a lease or its identity record: they are the evidence the node and the
// collector refuse on.
func nextSteps(dir string, r *GenerationReport, installationID string) []string {
	g := r.Generation
	lease := r.Lease.Path
	ident := filepath.Join(dir, identityName(g))
	all := filepath.Join(dir, strconv.FormatInt(g, 10)) + ".*"
	id := installationID
	unit := "oac-node-<installation-id>"
	if id != "" {
		unit = "oac-node-" + id
	}
	logs := fmt.Sprintf("journalctl -u %s -n 200 --no-pager | grep -i 'generation %d'", unit, g)
	grepLocks := "grep ' " + r.Lease.LockKey + " ' /proc/locks"
	if r.Lease.LockKey == "" {
		grepLocks = "cat /proc/locks"
	}
	reinstall := fmt.Sprintf("if the node must serve generation %d, uninstall the node (`sudo oac-node-install --uninstall --installation-id %s`) and install it again with a new command from the console", g, orPlaceholder(id))

	var next []string
	add := func(format string, args ...any) { next = append(next, fmt.Sprintf(format, args...)) }

	switch r.Lease.State {
	case StateIdentityMissing:
		add("Check `ls -li %s*`: the lease exists without its identity record, an initialization interrupted before the identity became durable; both the node and the collector refuse it and never re-adopt it.", lease)
		add("Check `%s`: no process may hold the lease; a holder listed here is an unexpected helper — see `ps -o pid,etime,args -p <pid>`.", grepLocks)
		add("Keep %s as it is (it is never re-created or removed); %s.", lease, reinstall)
	case StateMismatch:
		add("Compare `cat %s` with `cat %s`: %s.", ident, strings.TrimSuffix(all, "*")+"{preparing,collecting,dropped}", r.Lease.Reason)
		add("The lease belongs to another installation, generation or specification and is refused; keep both files for inspection; %s.", reinstall)
	case StateInodeReplaced:
		add("Check `ls -li %s` against the inode in `cat %s`: %s.", lease, ident, r.Lease.Reason)
		if r.Lease.Identity != nil {
			add("Check `grep ':%d ' /proc/locks`: a helper may still hold the original lease inode; wait until `ps -o pid,etime,args -p <pid>` shows it exited.", r.Lease.Identity.Inode)
		}
		add("Find what replaced the lease (`stat %s`); the replaced lease is refused even when its metadata agree; %s.", lease, reinstall)
	case StateUnsafe:
		add("Check `ls -li %s %s` and `stat -c '%%F %%h links, uid %%u, mode %%a' %s`: %s.", lease, ident, lease, r.Lease.Reason)
		add("%s", unsafeRemedy(r.Lease.Reason, lease, ident))
	case StateMalformed:
		add("Check `cat %s`: %s; it must hold exactly installation_id, generation, specification_digest, device and inode.", ident, r.Lease.Reason)
		add("The generation is refused while its identity is unreadable; keep the file for inspection; %s.", reinstall)
	case StateAbsent:
		switch {
		case strings.Contains(r.Lease.Reason, "identity record present"):
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
		add("Check `ls -li %s` and `cat %s`: %s; the record is refused until it is a private 0600 file of the node account with its exact keys.", p.Path, p.Path, p.Reason)
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
		add("Generation %d's final configuration is published but its plan (`cat %s`) is not cleared; the next preparation revalidates the same plan and identity and clears it; check `%s`.", g, filepath.Join(dir, preparingName(g)), logs)
	case rs.Preparing && rs.ImportStarted:
		add("An image import for generation %d may have started; the next preparation revalidates the same plan (`cat %s`), and plan, specification or path drift refuses; check `%s`.", g, filepath.Join(dir, preparingName(g)), logs)
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

// unsafeRemedy is the concrete next step for an unsafe lease or identity.
func unsafeRemedy(reason, lease, ident string) string {
	file := lease
	if strings.HasPrefix(reason, "identity record:") {
		file = ident
	}
	switch {
	case strings.Contains(reason, ErrSymlink.Error()):
		return fmt.Sprintf("A symbolic link stands where the node's file must be; it is never followed. Check `readlink %s %s` and who created it (`stat %s`); the generation stays refused until the private file is back.", lease, ident, lease)
	case strings.Contains(reason, ErrHardLinked.Error()):
		return fmt.Sprintf("Find the other names with `find / -xdev -samefile %s`; remove only the extra name (never %s itself) so the link count returns to 1.", file, file)
	case strings.Contains(reason, ErrForeignOwner.Error()):
		return fmt.Sprintf("After confirming with `ls -i %s` that the inode equals the one in `cat %s`, give the file back to the node account: `sudo chown oac-node: %s`.", lease, ident, file)
	case strings.Contains(reason, ErrUnsafeMode.Error()):
		return fmt.Sprintf("After confirming with `ls -i %s` that the inode equals the one in `cat %s`, restore the mode as the node account: `sudo -u oac-node chmod 600 %s`.", lease, ident, file)
	default:
		return fmt.Sprintf("Check `file %s`: the node expects a private regular file; the generation stays refused until it is one.", file)
	}
}
