package safefile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestExists(t *testing.T) {
	dir := t.TempDir()
	file, link, dangling := filepath.Join(dir, "f"), filepath.Join(dir, "l"), filepath.Join(dir, "d")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "none"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		want bool
	}{{dir, true}, {file, true}, {link, true}, {dangling, true}, {filepath.Join(dir, "none"), false}} {
		got, err := Exists(c.path)
		if err != nil || got != c.want {
			t.Errorf("Exists(%s) = %v, %v; want %v", c.path, got, err, c.want)
		}
	}
	if _, err := Exists(filepath.Join(file, "below")); err == nil {
		t.Error("Exists below a regular file: no error (ENOTDIR)")
	}
}
