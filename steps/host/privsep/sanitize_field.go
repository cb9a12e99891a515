package privsep

import "strings"

// SanitizeField is SanitizeString for a value printed inside one line of
// output (a path, a step name, an error text, a process's command): besides
// replacing every terminal control with '?', it writes each newline as the
// two characters `\n` and each tab as `\t`, so that a value the service
// account chose can neither start a line of its own (a forged "next:" hint)
// nor shift the columns of the line it is in. Backslashes are kept as they
// are: the escapes only make the line breaks visible, they are not meant to
// be decoded.
func SanitizeField(s string) string {
	s = SanitizeString(s)
	if !strings.ContainsAny(s, "\n\t") {
		return s
	}
	return fieldEscapes.Replace(s)
}

var fieldEscapes = strings.NewReplacer("\n", `\n`, "\t", `\t`)
