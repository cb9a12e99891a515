package workflow

import (
	"context"
	"slices"
	"testing"
)

// TestDefinitionsWalkEveryPath validates the five workflows and walks every
// transition of each with a fresh fsm, checking that fsm agrees with the
// definition on where each event leads.
func TestDefinitionsWalkEveryPath(t *testing.T) {
	names := map[string]bool{}
	for _, def := range Definitions() {
		t.Run(def.Name, func(t *testing.T) {
			if err := def.Validate(); err != nil {
				t.Fatal(err)
			}
			names[def.Name] = true
			for _, sd := range def.States {
				for _, tr := range sd.On {
					m := def.NewFSM(sd.Name)
					if err := m.Event(context.Background(), string(tr.Event)); err != nil {
						t.Fatalf("%s --%s-->: %v", sd.Name, tr.Event, err)
					}
					if State(m.Current()) != tr.To {
						t.Fatalf("%s --%s--> %s, want %s", sd.Name, tr.Event, m.Current(), tr.To)
					}
					if to, err := def.Next(sd.Name, tr.Event); err != nil || to != tr.To {
						t.Fatalf("Next(%s, %s) = %s, %v, want %s", sd.Name, tr.Event, to, err, tr.To)
					}
				}
			}
			// Every path from the initial state ends in the final state.
			var walk func(s State, depth int)
			walk = func(s State, depth int) {
				if depth > len(def.States)+1 {
					t.Fatalf("cycle through %s", s)
				}
				if s == def.Final {
					return
				}
				sd, _ := def.State(s)
				for _, tr := range sd.On {
					walk(tr.To, depth+1)
				}
			}
			walk(def.Initial(), 0)
			if def.Hash() != def.Hash() || len(def.Hash()) != 64 {
				t.Fatal("hash not stable")
			}
		})
	}
	for _, n := range []string{"install", "prepare", "repair", "collect", "uninstall"} {
		if !names[n] {
			t.Errorf("missing workflow %s", n)
		}
	}
}

// Next refuses what is not a move: an unknown event, another state's
// event, no event, an unknown state and any event out of the final state.
func TestNextRefusesWhatIsNotAMove(t *testing.T) {
	d := testDef()
	for name, c := range map[string]struct {
		from State
		ev   Event
	}{
		"unknown event":    {"first", "nonsense"},
		"another state's":  {"first", "second_done"},
		"no event":         {"first", ""},
		"unknown state":    {"nowhere", "first_done"},
		"out of the final": {d.Final, "fourth_done"},
	} {
		t.Run(name, func(t *testing.T) {
			if to, err := d.Next(c.from, c.ev); err == nil {
				t.Fatalf("Next(%s, %s) = %s, want an error", c.from, c.ev, to)
			}
		})
	}
	if to, err := d.Next("first", "skip"); err != nil || to != "fourth" {
		t.Fatalf("Next(first, skip) = %s, %v, want fourth", to, err)
	}
}

func TestHashChangesWithPolicy(t *testing.T) {
	a, b := testDef(), testDef()
	b.States[1].Policy = Rerun
	if a.Hash() == b.Hash() {
		t.Fatal("policy change not in the hash")
	}
}

// Who runs a state's step is not part of the hash: the pinned hashes of
// journals on hosts do not move with it, for a test definition and for
// every workflow the installer runs.
func TestHashLeavesOutTheAccount(t *testing.T) {
	a, b := testDef(), testDef()
	b.States[1].Account = ServiceAccount
	if a.Hash() != b.Hash() {
		t.Fatal("the account of a state changed the hash")
	}
	for _, def := range Definitions() {
		hash := def.Hash()
		for i := range def.States {
			if def.States[i].Account == Root {
				def.States[i].Account = ServiceAccount
			} else {
				def.States[i].Account = Root
			}
		}
		if def.Hash() != hash {
			t.Errorf("%s: changing the accounts changed the hash", def.Name)
		}
	}
}

// AccountStates lists the states of one account in the definition's order.
func TestAccountStates(t *testing.T) {
	for _, tc := range []struct {
		def  *Definition
		want []State
	}{
		{InstallDefinition(), []State{InstallNodeRoot, InstallMetadata, InstallDownloads, InstallHelper, InstallLease,
			InstallRuntime, InstallNetwork, InstallProviderConfig, InstallRegister, InstallWaitReady}},
		{UninstallDefinition(), []State{UninstallAskCore, UninstallNetwork, UninstallNodeState, UninstallMicrosandboxStore}},
	} {
		if got := tc.def.AccountStates(ServiceAccount); !slices.Equal(got, tc.want) {
			t.Errorf("%s: service-account states %v, want %v", tc.def.Name, got, tc.want)
		}
	}
	for _, def := range []*Definition{PrepareDefinition(), RepairDefinition(), CollectDefinition()} {
		if got := def.AccountStates(Root); len(got) != 0 {
			t.Errorf("%s runs as the service account, but names root's states %v", def.Name, got)
		}
	}
}

func TestValidateRejectsBrokenDefinitions(t *testing.T) {
	tests := map[string]func(d *Definition){
		"unknown target":   func(d *Definition) { d.States[0].On[0].To = "nowhere" },
		"duplicate state":  func(d *Definition) { d.States[1].Name = "first" },
		"unnamed state":    func(d *Definition) { d.States[1].Name = "" },
		"no transitions":   func(d *Definition) { d.States[3].On = nil },
		"unreachable":      func(d *Definition) { d.States[0].On = d.States[0].On[1:]; d.States[2].On[0].To = "finished" },
		"bad policy":       func(d *Definition) { d.States[0].Policy = 0 },
		"bad account":      func(d *Definition) { d.States[0].Account = 2 },
		"duplicate events": func(d *Definition) { d.States[0].On[1].Event = d.States[0].On[0].Event },
	}
	for name, mut := range tests {
		t.Run(name, func(t *testing.T) {
			d := testDef()
			mut(d)
			if err := d.Validate(); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
