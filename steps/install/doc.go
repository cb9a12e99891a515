// Package install is the install workflow (`oac-node-install` install and
// rerun, workflow.InstallDefinition): every state's step, whichever
// account runs it, in the file named after the state, and Run (run.go),
// the one place the workflow is wired.
//
//	state               runs as          file
//	preflight           root             preflight.go (+ preflight_home.go)
//	read_token          root             read_token.go
//	read_configuration  root             read_configuration.go (the child
//	                                     reads a registered node's too)
//	host_lock           root             host_lock.go
//	account, group      root             account.go, group.go
//	host_records        root             host_records.go
//	node_root, metadata, downloads,      node_root.go, metadata.go,
//	helper, lease, runtime, network,     downloads.go, helper.go, lease.go,
//	provider_config, register            runtime.go, network.go,
//	                    service account  provider_config.go, register.go
//	env_file, unit, start  root          env_file.go, unit.go, start.go
//	wait_ready          service account  wait_ready.go
//	summary             root             summary.go
//
// Each step is a workflow.Step and a workflow.Checker (a read-only check,
// in the same file), most a workflow.Verifier.
//
// Data. Root's steps see the run through Data (data.go; Env is the real
// one): the options, the host, Core's configuration, the adapters. The
// service account's steps see NodeEnv (data_node.go, data_bundle.go): a
// noderoot.Env bound to the enrolled generation, built from NodeOptions
// in the child.
//
// Wiring (run.go). Steps binds every state: root's to their step of Data,
// each state the definition marks workflow.ServiceAccount to an
// asaccount.Step (serviceSteps), which sends the child an
// asaccount.Request (the state, the facts, Input; the enrollment token
// only for register's run) and records its Answer in root's journal
// /var/lib/oac-node-install/<id>/install.journal. In the child, Server
// (serve.go; RunStep in process for tests) decodes the Input, opens the
// NodeEnv and runs, verifies or checks the state's step of nodeSteps.
// Root never executes a file the account can write: the child runs the
// binary bytes root captured at start (privsep.Capture).
//
//	root engine ── begin node_root ──▶ asaccount.Step.Run
//	                                   └─ asaccount.Children.Run:
//	                                        Session.Call(Request: step,
//	                                        facts, Input)
//	                                        child: Server → nodeSteps
//	            ◀─ done node_root (facts) ─┘
//
// The service-account steps of a run share one child (asaccount.Children:
// a privsep.Session of role asaccount.Role), started again only when the
// account's uid, gid or groups change, and ended before the host lock is
// released (Command.EndChild). A refusal in the child (class refused)
// changed nothing, so the failure is recorded as unchanged and the step
// runs again on the next run (asaccount.StepErr).
//
// Run first makes the checks that read nothing of the host's records
// (platform, systemd, SELinux, no token in the environment), then reads the
// token, then takes /run/oac-node.lock and keeps it to the end: every
// decision from the host's state is taken under it, from root's records
// (CONTRACT §10). Before the journal, Run checks every step read-only
// (workflow.Check; the service-account steps answered by one child for
// all of them: StepCheck, CheckNodeSteps; a registered node's child reads
// Core's configuration and checks in the same request, StepConfiguration):
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
// Shared by several states or commands: check.go (the checks' helpers,
// the child's check of every step), records.go (root's records: the
// bookkeeping, the host record), journal.go, space.go and bundle.go
// (preflight's and the check command's disk space and bundle checks),
// probe.go (the check command), install_lock.go (the node's install.lock,
// which the child holds from its check and from node_root through
// register, released before wait_ready: InstallLock). The host lock, the account and bookkeeping
// checks and the registration record (HostLock, CheckBookkeeping,
// AccountMismatch, Registered) are shared with steps/uninstall, which also
// uses CoreIdentity, InstallationLabel and ServerErrors; RecordedAccount
// with steps/status. Package install never imports uninstall.
package install
