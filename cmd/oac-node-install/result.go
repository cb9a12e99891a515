package main

import (
	"errors"
	"io"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/workflow"
)

// resultDocument is the one JSON document an install or an uninstall prints on
// standard output with --json, once the run ended, so that a fleet tool
// (Ansible's changed_when, a shell loop) acts on the outcome without
// reading text. The operator's progress and summary go to standard error
// instead; the exit code is the one the run has without --json. Format
// version 1 (a change that removes or renames a field, or changes its
// meaning, increments it):
//
//	{
//	  "format": 1,
//	  "action": "install",            // or "uninstall"
//	  "installation_id": "0b4a2c6e-…",
//	  "result": "changed",            // "changed", "resumed", "unchanged" or "failed"
//	  "changed": true,                // whether the run changed the host
//	  "state": "installed",           // the workflow's state at the end (absent when it never ran)
//	  "condition": "complete",        // its journal's condition (workflow.Condition); "incomplete"
//	                                  // when an uninstallation kept the account for a rerun
//	  "journal": "/var/lib/oac-node-install/0b4a2c6e-…/install.journal",
//	  "error": "…",                   // "failed" only: the message printed on standard error
//	  "exit_code": 0
//	}
//
// result is read from the workflow's report by type (workflow.RunKind):
// "unchanged" when the run found the host converged and wrote nothing (a
// rerun of an installed node, an uninstalled node's uninstall), "resumed"
// when it continued an unfinished journal, "changed" when it ran a new
// one. "failed" carries the sanitized message and changed false when the
// failure was a refusal before any change ("Nothing was changed."), true
// otherwise (the run changed the host before it failed).
type resultDocument struct {
	Format         int                  `json:"format"`
	Action         string               `json:"action"`
	InstallationID ident.InstallationID `json:"installation_id"`
	Result         string               `json:"result"`
	Changed        bool                 `json:"changed"`
	State          string               `json:"state,omitempty"`
	Condition      string               `json:"condition,omitempty"`
	Journal        string               `json:"journal,omitempty"`
	Error          string               `json:"error,omitempty"`
	ExitCode       int                  `json:"exit_code"`
}

// resultDocumentFormat is resultDocument's format version.
const resultDocumentFormat = 1

// The values of resultDocument.Result.
const (
	resultChanged   = "changed"
	resultResumed   = "resumed"
	resultUnchanged = "unchanged"
	resultFailed    = "failed"
)

// newResultDocument is the document of one run of action ("install" or
// "uninstall").
func newResultDocument(action string) *resultDocument {
	return &resultDocument{Format: resultDocumentFormat, Action: action}
}

// ran records the workflow's report of the run (nil when it never ran).
func (r *resultDocument) ran(rep *workflow.Report) {
	if r == nil || rep == nil {
		return
	}
	r.State, r.Condition, r.Journal = string(rep.State), string(rep.Condition), rep.Journal
	switch rep.Run {
	case workflow.RunConverged:
		r.Result = resultUnchanged
		if len(rep.Wrote) > 0 {
			// The workflow had nothing to do, the command did (the
			// command on the host copied or its record completed).
			r.Result, r.Changed = resultChanged, true
		}
	case workflow.RunResumed:
		r.Result, r.Changed = resultResumed, true
	default:
		r.Result, r.Changed = resultChanged, true
	}
}

// end completes the document with how the command ended: err (nil on
// success), the exit code and the message printed for it.
func (r *resultDocument) end(err error, code int, message string) {
	r.ExitCode = code
	if err == nil {
		if r.Result == "" {
			r.Result, r.Changed = resultChanged, true
		}
		return
	}
	var ue *usageError
	r.Result, r.Error = resultFailed, message
	r.Changed = !errors.As(err, &ue) && !workflow.NothingChanged(err)
}

// write prints the document (escaped as status --json's is).
func (r *resultDocument) write(w io.Writer) error { return writeJSON(w, r) }

// failureMessage is what report prints for err, without the prefix: the
// document's error.
func (f failure) failureMessage(err error, interrupted *signalError) string {
	var ue *usageError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ue):
		msg := field(ue.msg)
		if f.changing {
			msg = strings.TrimSuffix(msg, ".") + ". " + workflow.NothingWasChanged
		}
		return msg
	case interrupted != nil:
		var ec exitCoder
		if !errors.As(err, &ec) {
			return interruptedMessage(err)
		}
	}
	text := err.Error()
	if f.changing {
		text = workflow.Message(err)
	}
	return privsep.SanitizeString(withoutRoles(err, text))
}
