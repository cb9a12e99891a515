// Package install holds the root side of the install workflow: the steps
// root runs itself, and NodeStep, which runs one of the service-account
// steps (steps/generation's InstallSteps) in a privilege-separated child
// and records its result in root's journal.
//
//	root engine ── begin node_root ──▶ NodeStep.Run
//	                                   └─ Children.Run: Session.Call(
//	                                        request: step, facts, inputs,
//	                                        token only for register)
//	                                        child: generation.RunInstallStep
//	            ◀─ done node_root (facts) ─┘
//
// The service-account steps of a run share one child (Children: a
// privsep.Session of role install-node), started again only when the
// account's uid, gid or groups change, and ended before the host lock is
// released.
//
// A refusal in the child (class refused) changed nothing, so the failure
// is recorded as unchanged and the step runs again on the next run.
//
// Run first makes the checks that read nothing of the host's records
// (platform, systemd, SELinux, a token in the environment), then reads the
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
package install
