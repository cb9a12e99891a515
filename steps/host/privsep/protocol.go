package privsep

import "encoding/json"

// The parent and the child talk over two pipes besides stdout and stderr:
//
//	fd 3  child → parent  newline-delimited JSON messages (message)
//	fd 4  parent → child  one JSON envelope line (envelope); then end of
//	                      file, or, for a session, one request per line
//	                      until end of file
//	fd 5  parent → child  the sealed executable, read-only (Child.Executable)
//
// For each request the child sends any number of "phase", "line" and
// "progress" messages, then exactly one "result" or "error" message. A
// child of one request then exits; a session's child reads the next
// request, and exits at the request pipe's end of file.
const (
	resultFD  = 3
	requestFD = 4
	binaryFD  = 5
)

// ChildCommand is the hidden first argument that makes the binary serve as a
// service-account child: argv is [oac-node-install, ChildCommand, role].
// It is not a command for operators; the child refuses to run without the
// parent's pipes.
const ChildCommand = "__privsep-child"

// Limits on what crosses the pipes.
const (
	maxRequest = 16 << 20 // the envelope, parent → child
	maxMessage = 8 << 20  // one message line, child → parent
	maxText    = 64 << 10 // text of one progress line or error message
)

// Message types.
const (
	msgPhase = "phase"
	msgLine  = "line"
	// msgProgress is a transfer's progress: Text names the file, Done and
	// Total are its bytes held and its size.
	msgProgress = "progress"
	msgResult   = "result"
	msgError    = "error"
)

// resultPrefix starts a result message as the child writes it: the message
// with its type first and its result last, so the result's bytes are the
// rest of the line but its closing brace.
const resultPrefix = `{"type":"result","result":`

// envelope is what the parent sends the child first: who it must be, and
// the handler's request, or Session: the requests follow, one per line.
type envelope struct {
	UID     int             `json:"uid"`
	GID     int             `json:"gid"`
	Groups  []int           `json:"groups"`
	Session bool            `json:"session,omitempty"`
	Request json.RawMessage `json:"request,omitempty"`
}

// message is one line the child sends.
type message struct {
	Type   string          `json:"type"`
	Text   string          `json:"text,omitempty"`
	Class  string          `json:"class,omitempty"`
	Done   int64           `json:"done,omitempty"`
	Total  int64           `json:"total,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
}
