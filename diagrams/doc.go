// Package diagrams renders the workflow definitions of package workflow as
// Mermaid state diagrams. The files beside this one are generated:
//
//	go generate ./diagrams     (or: make diagrams)
//
// and a test fails when a committed diagram no longer matches its
// definition. The transitions come from looplab/fsm's own Mermaid output of a
// fresh machine in the initial state; this package adds the final state and
// marks each state's recovery policy.
package diagrams

//go:generate go run generate.go
