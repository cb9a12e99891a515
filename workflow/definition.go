package workflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/looplab/fsm"
)

// State names a state of a workflow. State names are persistence keys: they
// are written to journals on real hosts, so renaming one is a format change.
type State string

// Event names a transition between two states. Event names are persistence
// keys too.
type Event string

// Policy says how the engine resumes a step that was interrupted after its
// begin record and before its done or fail record.
type Policy int

const (
	// Rerun steps are idempotent (check-then-act) and simply run again.
	Rerun Policy = iota + 1
	// Verify steps are not blindly repeatable: on resume the step's Verify
	// decides from the host whether its effect happened completely (done),
	// not at all (run it), or is unknown (refuse).
	Verify
	// Inspect steps leave, when interrupted, a state only an operator may
	// judge. Resume refuses, and status and leases show it.
	Inspect
)

func (p Policy) String() string {
	switch p {
	case Rerun:
		return "rerun"
	case Verify:
		return "verify"
	case Inspect:
		return "inspect"
	}
	return fmt.Sprintf("policy(%d)", int(p))
}

// Account is the account a state's step runs as. The engine never reads
// it, and it is not part of the definition's hash (a journal does not
// depend on who ran a step): the package that binds a workflow's steps
// reads it. Root's install and uninstall bind their ServiceAccount states
// to steps that run in a privilege-separated child (steps/asaccount); the
// generation helper runs prepare, repair and collect as the service
// account itself, so each of their states is the helper's own.
type Account int

const (
	// Root is the zero Account: root's engine runs the step in its own
	// process.
	Root Account = iota
	// ServiceAccount: the step runs as the service account oac-node.
	ServiceAccount
)

func (a Account) String() string {
	switch a {
	case Root:
		return "root"
	case ServiceAccount:
		return "service account"
	}
	return fmt.Sprintf("account(%d)", int(a))
}

// Transition is one outgoing edge of a state.
type Transition struct {
	Event Event
	To    State
}

// StateDef is one non-final state: its recovery policy and its outgoing
// transitions. The step that runs in it has the state's name (one name per
// thing: the journal's step field is the state name). The first transition
// is the one taken when the step does not name an event.
type StateDef struct {
	Name   State
	Policy Policy
	On     []Transition
	// Doc is one line for the diagram and for status output.
	Doc string
	// Account runs the state's step (Root when not set).
	Account Account
}

// step is the name of the state's step as journal records, reports and
// errors spell it: the state's name.
func (sd StateDef) step() string { return string(sd.Name) }

// Definition is a workflow: its name, its states in order, and its final
// state. The initial state is the first in States.
type Definition struct {
	Name   string
	States []StateDef
	Final  State
}

// Initial returns the state a new run starts in.
func (d *Definition) Initial() State { return d.States[0].Name }

// State returns the definition of the named non-final state.
func (d *Definition) State(s State) (StateDef, bool) {
	for _, sd := range d.States {
		if sd.Name == s {
			return sd, true
		}
	}
	return StateDef{}, false
}

// AccountStates returns, in order, the non-final states whose step runs as
// a.
func (d *Definition) AccountStates(a Account) []State {
	var out []State
	for _, sd := range d.States {
		if sd.Account == a {
			out = append(out, sd.Name)
		}
	}
	return out
}

// hasState reports whether s is a state of the definition, final included.
func (d *Definition) hasState(s State) bool {
	if s == d.Final {
		return true
	}
	_, ok := d.State(s)
	return ok
}

// events returns the fsm event table of the definition.
func (d *Definition) events() fsm.Events {
	var evs fsm.Events
	for _, sd := range d.States {
		for _, t := range sd.On {
			evs = append(evs, fsm.EventDesc{Name: string(t.Event), Src: []string{string(sd.Name)}, Dst: string(t.To)})
		}
	}
	return evs
}

// NewFSM returns a fresh state machine for the definition, in state s. It
// has no callbacks: the engine does all fallible work outside fsm.
func (d *Definition) NewFSM(s State) *fsm.FSM {
	return fsm.NewFSM(string(s), d.events(), nil)
}

// Next returns the state event ev leads to from state from. A fresh fsm in
// from decides, so that the engine, Check and replay move by the one
// transition table fsm checks; the error says why ev is not a move from
// from (an unknown event, one from another state, or none out of the final
// state). An empty ev is no event: the caller names the state's first
// transition's event when a step names none.
func (d *Definition) Next(from State, ev Event) (State, error) {
	m := d.NewFSM(from)
	// Never a context that can be cancelled: a cancelled Event wedges the
	// machine (this one is thrown away, but the rule holds for every Event).
	if err := m.Event(context.Background(), string(ev)); err != nil {
		return "", err
	}
	return State(m.Current()), nil
}

// Validate checks the definition's own consistency: unique state names,
// known policies and accounts, every transition leading to a known state, every
// state reachable from the initial one, and the final state reachable.
func (d *Definition) Validate() error {
	if d.Name == "" || len(d.States) == 0 || d.Final == "" {
		return fmt.Errorf("workflow definition %q: name, states and final state are required", d.Name)
	}
	states := map[State]bool{d.Final: true}
	for _, sd := range d.States {
		if states[sd.Name] {
			return fmt.Errorf("workflow %s: duplicate state %q", d.Name, sd.Name)
		}
		states[sd.Name] = true
		if sd.Name == "" {
			return fmt.Errorf("workflow %s: a state has no name", d.Name)
		}
		if sd.Policy < Rerun || sd.Policy > Inspect {
			return fmt.Errorf("workflow %s: state %q: unknown policy %d", d.Name, sd.Name, sd.Policy)
		}
		if sd.Account != Root && sd.Account != ServiceAccount {
			return fmt.Errorf("workflow %s: state %q: unknown account %d", d.Name, sd.Name, sd.Account)
		}
		if len(sd.On) == 0 {
			return fmt.Errorf("workflow %s: state %q has no outgoing transition", d.Name, sd.Name)
		}
	}
	events := map[string]bool{}
	for _, sd := range d.States {
		for _, t := range sd.On {
			if !states[t.To] {
				return fmt.Errorf("workflow %s: state %q: event %q leads to unknown state %q", d.Name, sd.Name, t.Event, t.To)
			}
			key := string(sd.Name) + "\x00" + string(t.Event)
			if events[key] {
				return fmt.Errorf("workflow %s: state %q: duplicate event %q", d.Name, sd.Name, t.Event)
			}
			events[key] = true
		}
	}
	seen := map[State]bool{}
	var walk func(State)
	walk = func(s State) {
		if seen[s] {
			return
		}
		seen[s] = true
		if sd, ok := d.State(s); ok {
			for _, t := range sd.On {
				walk(t.To)
			}
		}
	}
	walk(d.Initial())
	for s := range states {
		if !seen[s] {
			return fmt.Errorf("workflow %s: state %q is unreachable", d.Name, s)
		}
	}
	return nil
}

// Hash identifies the definition's persistent shape: its name, states in
// order, step names, policies, transitions and final state. A journal written
// under another hash is not resumed. Each state's step is named after it:
// the text keeps "step <name>" so that the hashes pinned in journals do not
// change. A state's Doc and Account are not part of it: neither changes
// what a journal means.
func (d *Definition) Hash() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workflow %s\nfinal %s\n", d.Name, d.Final)
	for _, sd := range d.States {
		fmt.Fprintf(&b, "state %s step %s policy %s\n", sd.Name, sd.Name, sd.Policy)
		ts := append([]Transition(nil), sd.On...)
		sort.Slice(ts, func(i, j int) bool { return ts[i].Event < ts[j].Event })
		for _, t := range ts {
			first := ""
			if t == sd.On[0] {
				first = " default"
			}
			fmt.Fprintf(&b, "  on %s -> %s%s\n", t.Event, t.To, first)
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}
