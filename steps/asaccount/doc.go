// Package asaccount runs a step of one of root's workflows as the service
// account: install's and uninstall's states marked workflow.ServiceAccount
// in their definitions. It is built on the privsep host adapter and sits
// beside the step packages, not among the host adapters, because it is a
// kind of step: it implements workflow.Step and workflow.Verifier and maps
// a child's refusal to a workflow.Refusal.
//
// Who runs as whom. Root's engine runs the workflow and records every
// transition in root's journal. For a ServiceAccount state it runs a Step,
// which sends one Request to a child running as oac-node and records the
// child's Answer as the step's result. The child is this binary, executed
// from the bytes root captured at start (privsep.Capture), so root never
// executes a file the account can write. It serves one role, Role: Serve
// hands each request to the Server of its workflow (install.Server,
// uninstall.Server), which runs, verifies or checks the one step as the
// account and answers; a Server's progress lines go through Log.
//
//	root engine ── begin <state> ──▶ Step.Run / Step.Verify
//	                                  └─ Runner = Children.Run
//	                                       privsep.Session.Call(Request)
//	   child (oac-node), Role ◀── one request per line ──┘
//	     Serve ─▶ servers[req.Workflow] ─▶ Answer | classified error
//	            ◀─ done <state> (event, facts) ─┘
//
// The wire is privsep's session: the envelope first (the account's uid,
// gid and groups), then one Request per line until the end of file; for
// each, any number of progress messages, then one result (an Answer) or
// one error with its class. A Request names its workflow and step, whether
// it verifies, the run's facts, and the workflow's own inputs (Input,
// typed by the workflow); an Answer carries the verification's outcome,
// the event and facts, and the workflow's own extra answer (Output). The
// request travels on the request pipe only, never in arguments, the
// environment or a log: install's inputs hold the enrollment token for the
// register step (and only for it).
//
// Children keeps one child for a series of steps (one privsep.Session), as
// long as the account's uid, gid and groups are those it started with; when
// they change (install's group step adds the account to a group), the next
// step starts a new one. Whoever runs the workflow closes it
// before the host lock is released, and uninstall before its account step,
// which keeps the account while any process of it runs. Without a
// Progress of their own, the child's progress lines go to the Output
// given.
//
// One refusal mapping, both ways (refusal.go): in the child, a
// *workflow.Refusal is sent as privsep.ClassRefused, and the server's own
// error types as ClassUnregistered or ClassTransfer (Server.Errors); in the
// parent, a child's ClassRefused failure — or a *workflow.Refusal from a
// step run in process in tests — is the step's refusal that changed
// nothing (workflow.Unchanged of a workflow.Refusal), and a
// ClassUnregistered failure is Unregistered. No error is classified by
// its text.
package asaccount
