// Package workflow is the engine that runs the installer's explicit state
// machines, and the five workflow definitions it runs: install, prepare,
// repair, collect and uninstall.
//
// A Definition names its states in order, the events between them (a
// looplab/fsm event table, which also draws the diagrams in diagrams/), and
// for each state the step that runs in it with a recovery policy:
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
// fsm keeps no state on disk. On start the engine replays the journal,
// validates the replayed state name against the definition (fsm would accept
// any name), calls SetState, and continues. A begin without a matching done
// or fail is an interrupted step, resolved by the step's policy. Fallible work
// runs in the engine loop, never in fsm callbacks, and Event is always given a
// context that cannot be cancelled: a cancelled Event wedges the machine.
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
// InspectJournal reads a journal without changing it and reports the current state,
// the completed steps, attempts, the last error and one of complete,
// resumable, needs-inspection or failed; the status command prints it.
package workflow
