// Package workflow is the engine that runs the installer's explicit state
// machines, and the five workflow definitions it runs: install, prepare,
// repair, collect and uninstall.
//
// A Definition names its states in order, the events between them (a
// looplab/fsm event table, which also draws the diagrams in diagrams/), and
// each state's recovery policy. Steps are not part of a definition: the
// workflow's package binds them, a map from State to Step given to Runner
// and Check, and a step's name in the journal is its state's name. Which
// account runs a state's step is stated once, in its StateDef (Account:
// Root, or ServiceAccount), outside the definition's hash; the engine never
// reads it, the package that binds the steps does.
//
//	Rerun    idempotent (check-then-act): run again after an interruption
//	Verify   the step's Verify decides from the host: done, not done, unknown
//	Inspect  an interruption leaves what only an operator may judge: refuse
//
// The engine writes every run to a journal (package journal):
//
//	header  binds the run: workflow, definition hash, version, installation,
//	        generation and specification digest where relevant
//	begin   the step's intent, durable before its first side effect
//	done    the step's outcome: the event it fired and its output facts
//	fail    the step's error class and message
//	end     the run reached a final state
//
// Records are JSON: written by encoding/json, read back through
// journal/strictjson (the installer's one decoder), which skips a key a
// record does not name and refuses a key twice or a null.
//
// fsm keeps no state on disk. The run's state is the replayed journal's:
// every state a record names is checked against the definition (fsm would
// accept any name), and each done record's event is checked by
// Definition.Next (a fresh fsm in the current state), which must lead where
// the record says. The engine and Check move by the same Next. A begin
// without a matching done or fail is an interrupted step, resolved by the
// step's policy. Fallible work runs in the engine loop, never in fsm
// callbacks, and Event is never given a context that can be cancelled: a
// cancelled Event wedges the machine.
//
//	        replay journal
//	             │
//	┌────────────▼────────────┐   end record   ┌──────────┐
//	│ state S, pending step?  ├───────────────►│ complete │
//	└────────────┬────────────┘                └──────────┘
//	   pending   │ none
//	┌────────────▼────────────┐
//	│ Rerun: run  Verify: ask │── unknown / Inspect ──► refuse
//	└────────────┬────────────┘
//	             ▼
//	 begin ─► step.Run ─► done(event, facts) ─► fsm.Event ─► next state
//
// One function, replay.apply, says what each record means and which record
// may follow which. Replay applies every record it reads; the engine applies
// every record it is about to write to a copy of its state and writes only a
// record that applies, so a journal the engine wrote always replays.
//
// A run decides before it writes: it compares the header's binding first
// (another definition, version or instance is a *BindingError, its records
// are not replayed), replays, and resolves an interrupted step (an Inspect
// refusal, a Verify that cannot tell) before its first record; only then is
// a torn tail cut (journal.Journal.Repair) and the cut reported. Before every
// record it writes, the engine checks that the instance lock file is still
// the one it locked, and stops writing when it was replaced.
//
// Runner.Observe is told each step's Progress as a typed Phase (begin,
// done, verified, resumed, fail). Refusal is the one refusal type of the
// installer: a check or step that refuses changed nothing, and Message
// adds "Nothing was changed." once, where a command prints the failure;
// no caller classifies an error by its text.
//
// InspectJournal reads a journal without changing it and reports the
// current state, the completed steps, attempts, the last error and one of
// complete, resumable, needs-inspection or failed; steps/status shows it.
// An uninstallation that kept the service account for a rerun ended its
// journal but is reported incomplete (Report.AccountKept) by the command
// that ran it and by status.
//
// The engine runs as the account of the process that calls it: root for
// install and uninstall (journals in /var/lib/oac-node-install/<id>/), the
// service account for the generation helper's prepare, repair and collect
// (journals in the node root). It never touches the host itself.
package workflow
