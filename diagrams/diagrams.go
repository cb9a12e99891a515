package diagrams

import (
	"fmt"
	"sort"
	"strings"

	"github.com/looplab/fsm"

	"github.com/openagentcore/oac-node-install/workflow"
)

// Mermaid returns the diagram of def as a Markdown document holding one
// Mermaid stateDiagram-v2 block and a table of the states (each runs the
// step of its name) and their policies.
func Mermaid(def *workflow.Definition) (string, error) {
	// A fresh machine: fsm's start arrow points at its current state.
	graph, err := fsm.VisualizeWithType(def.NewFSM(def.Initial()), fsm.MermaidStateDiagram)
	if err != nil {
		return "", fmt.Errorf("draw %s: %w", def.Name, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# The %s workflow\n\n", def.Name)
	b.WriteString("Generated from `workflow/" + def.Name + ".go` by `make diagrams`; do not edit.\n")
	b.WriteString("States with a dashed border have the `verify` recovery policy, red ones `inspect`;\n")
	b.WriteString("all others are `rerun`.\n\n")
	b.WriteString("```mermaid\n")
	b.WriteString(graph)
	fmt.Fprintf(&b, "    %s --> [*]\n", def.Final)
	byPolicy := map[workflow.Policy][]string{}
	for _, sd := range def.States {
		byPolicy[sd.Policy] = append(byPolicy[sd.Policy], string(sd.Name))
	}
	b.WriteString("    classDef verify stroke-dasharray: 5 5\n")
	b.WriteString("    classDef inspect fill:#f8d7da,stroke:#b02a37\n")
	for _, p := range []workflow.Policy{workflow.Verify, workflow.Inspect} {
		if names := byPolicy[p]; len(names) > 0 {
			sort.Strings(names)
			fmt.Fprintf(&b, "    class %s %s\n", strings.Join(names, ","), p)
		}
	}
	b.WriteString("```\n\n")
	// A state's step has the state's name (Definition.Validate): one column.
	b.WriteString("| state and step | policy | what it does |\n|---|---|---|\n")
	for _, sd := range def.States {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", sd.Name, sd.Policy, strings.ReplaceAll(sd.Doc, "|", "\\|"))
	}
	fmt.Fprintf(&b, "| `%s` | final | |\n", def.Final)
	return b.String(), nil
}

// Files returns every diagram by its file name in this directory.
func Files() (map[string]string, error) {
	out := map[string]string{}
	for _, def := range workflow.Definitions() {
		s, err := Mermaid(def)
		if err != nil {
			return nil, err
		}
		out[def.Name+".md"] = s
	}
	return out, nil
}
