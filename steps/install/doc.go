// Package install is root's side of `oac-node-install` (install and rerun):
// Run (run.go), the one place the install workflow is wired; the steps
// root runs itself (preflight, read_token, read_configuration, host_lock,
// account, group, host_records, env_file, unit, start, summary), which see
// the run through Data (data.go); and the service-account steps — the
// states the install definition marks workflow.ServiceAccount, which are
// steps/generation's nodeSteps — each bound to an asaccount.Step that
// runs it in a privilege-separated child as oac-node and records its
// result in root's journal /var/lib/oac-node-install/<id>/install.journal
// (serviceaccount.go). Root never executes a file the account can write:
// the child runs the binary bytes root captured at start (privsep.Capture).
//
//	root engine ── begin node_root ──▶ asaccount.Step.Run
//	                                   └─ asaccount.Children.Run:
//	                                        Session.Call(request: step,
//	                                        facts, Input,
//	                                        token only for register)
//	                                        child: Server
//	            ◀─ done node_root (facts) ─┘
//
// The service-account steps of a run share one child (asaccount.Children:
// a privsep.Session of role asaccount.Role), started again only when the
// account's uid, gid or groups change, and ended before the host lock is
// released (Command.EndChild).
//
// A refusal in the child (class refused) changed nothing, so the failure
// is recorded as unchanged and the step runs again on the next run
// (asaccount.StepErr).
//
// Run first makes the checks that read nothing of the host's records
// (platform, systemd, SELinux, no token in the environment), then reads the
// token, then takes /run/oac-node.lock and keeps it to the end: every
// decision from the host's state is taken under it, from root's records
// (CONTRACT §10). Before the journal, Run checks every step read-only
// (workflow.Check; each step is a workflow.Checker, the service-account
// steps answered by one child for all of them):
//
//	Run ── lock-free checks ── token ── host lock ── bookkeeping intact?
//	    ── known node? Core's configuration ── preflight ── workflow.Check
//	                                     ┌─ a refusal: nothing was changed
//	                                     ├─ every step satisfied, no run
//	                                     │  unfinished: the summary, no write
//	                                     └─ otherwise: journal, the workflow
//	                                        (each step checks again and
//	                                        changes what differs)
//
// The host lock, the account and bookkeeping checks and the registration
// record (HostLock, CheckBookkeeping, AccountMismatch, Registered) are
// shared with steps/uninstall, and RecordedAccount with steps/status.
package install
