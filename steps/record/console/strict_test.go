package console

import (
	"os"
	"path/filepath"
	"testing"
)

// active.json is read with the strict decoder: encoding/json read the
// second of these keys as the active release.
func TestReadActiveRefusesCaseVariantsAndDuplicates(t *testing.T) {
	for name, doc := range map[string]string{
		"case variant": `{"SOURCE_COMMIT": "` + commitA + `", "source_commit": "` + commitB + `"}`,
		"duplicate":    `{"source_commit": "` + commitA + `", "source_commit": "` + commitB + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, ActiveName), []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			if got, err := ReadActive(dir); err == nil {
				t.Fatalf("ReadActive = %q, want a refusal", got)
			}
		})
	}
}
