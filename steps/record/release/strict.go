package release

import (
	"errors"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
)

// fromStrict turns a refusal of the strict decoder (journal/strictjson)
// into a *FieldError of kind; a refusal of the whole document is about
// field root.
func fromStrict(err error, kind error, root string) error {
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return &FieldError{Kind: kind, Field: root, Reason: err.Error()}
	}
	field := se.Path
	if field == "" {
		field = root
	}
	return &FieldError{Kind: kind, Field: field, Reason: se.Reason}
}
