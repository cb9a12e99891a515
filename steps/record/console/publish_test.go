package console

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/release"
)

func relPath(commit string, parts ...string) string {
	return filepath.Join(append([]string{"releases", commit}, parts...)...)
}

func TestPublishNew(t *testing.T) {
	payload := filepath.Join(t.TempDir(), "node-payload")
	fx := newFixture(t, commitA, "https://releases.example/oac/build-"+commitA)
	if err := Publish(payload, fx.files); err != nil {
		t.Fatal(err)
	}
	got := snapshot(t, payload)
	for name, data := range fx.files.Files {
		if got[relPath(commitA, name)] != string(data) {
			t.Errorf("%s not published with its bytes", name)
		}
	}
	for name, data := range fx.content {
		if got[relPath(commitA, "artifacts", name)] != string(data) {
			t.Errorf("artifact %s not published with its bytes", name)
		}
	}
	wantFiles := len(fx.files.Files) + len(fx.content) + 1 // + .publish.lock
	if len(got) != wantFiles {
		t.Errorf("%d files in the payload, want %d: %v", len(got), wantFiles, slicesKeys(got))
	}
	err := filepath.Walk(payload, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if info.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", p, info.Mode().Perm(), want)
		}
		if info.Mode().IsRegular() && info.Sys() != nil {
			if n := linkCount(info); n != 1 {
				t.Errorf("%s has %d links", p, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRepublish(t *testing.T) {
	image := release.PathRuntimeImage
	node := release.PathNode
	tests := []struct {
		name string
		// first is published first; prepare may then change the payload;
		// second is the republication, which must give want.
		first   func(fx *fixture) ReleaseFiles
		prepare func(t *testing.T, fx *fixture, payload string)
		second  func(t *testing.T, fx *fixture) ReleaseFiles
		want    error
		added   []string // logical paths whose artifact the republication adds
	}{
		{
			name:   "identical",
			first:  func(fx *fixture) ReleaseFiles { return fx.files },
			second: func(_ *testing.T, fx *fixture) ReleaseFiles { return fx.files },
		},
		{
			name:   "identical without artifacts",
			first:  func(fx *fixture) ReleaseFiles { return fx.files },
			second: func(_ *testing.T, fx *fixture) ReleaseFiles { return ReleaseFiles{Files: fx.files.Files} },
		},
		{
			name:   "missing declared artifact is added",
			first:  func(fx *fixture) ReleaseFiles { return fx.without(image, node) },
			second: func(_ *testing.T, fx *fixture) ReleaseFiles { return fx.files },
			added:  []string{image, node},
		},
		{
			name:  "conflicting metadata byte adds nothing",
			first: func(fx *fixture) ReleaseFiles { return fx.without(image) },
			second: func(t *testing.T, fx *fixture) ReleaseFiles {
				return fx.withFile(t, release.SeccompName, []byte(`{"defaultAction":"SCMP_ACT_ERRNO"}`+"\n"))
			},
			want: ErrConflict,
		},
		{
			name:  "conflicting installer adds nothing",
			first: func(fx *fixture) ReleaseFiles { return fx.without(image) },
			second: func(t *testing.T, fx *fixture) ReleaseFiles {
				return fx.withFile(t, release.InstallerName, []byte("another build"))
			},
			want: ErrConflict,
		},
		{
			name:  "existing artifact with changed bytes adds nothing",
			first: func(fx *fixture) ReleaseFiles { return fx.without(image) },
			prepare: func(t *testing.T, fx *fixture, payload string) {
				p := filepath.Join(payload, relPath(commitA, "artifacts", fx.names[node]))
				data := []byte(strings.ToUpper(string(fx.content[fx.names[node]])))
				if err := os.WriteFile(p, data, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			second: func(_ *testing.T, fx *fixture) ReleaseFiles { return fx.files },
			want:   ErrConflict,
		},
		{
			name:  "truncated existing artifact adds nothing",
			first: func(fx *fixture) ReleaseFiles { return fx.without(image) },
			prepare: func(t *testing.T, fx *fixture, payload string) {
				p := filepath.Join(payload, relPath(commitA, "artifacts", fx.names[node]))
				if err := os.Truncate(p, 3); err != nil {
					t.Fatal(err)
				}
			},
			second: func(_ *testing.T, fx *fixture) ReleaseFiles { return fx.files },
			want:   ErrConflict,
		},
		{
			name:  "undeclared file in the release adds nothing",
			first: func(fx *fixture) ReleaseFiles { return fx.without(image) },
			prepare: func(t *testing.T, fx *fixture, payload string) {
				p := filepath.Join(payload, relPath(commitA, "artifacts", "oac-"+commitA+"-linux-amd64-extra"))
				if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			second: func(_ *testing.T, fx *fixture) ReleaseFiles { return fx.files },
			want:   ErrConflict,
		},
		{
			name:  "offered artifact with other bytes adds nothing",
			first: func(fx *fixture) ReleaseFiles { return fx.without(image, node) },
			prepare: func(t *testing.T, fx *fixture, payload string) {
				if err := os.WriteFile(fx.files.Artifacts[fx.names[image]], []byte("tampered"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			second: func(_ *testing.T, fx *fixture) ReleaseFiles { return fx.files },
			want:   release.ErrChecksumMismatch,
		},
		{
			name:  "leftover staging file is cleared",
			first: func(fx *fixture) ReleaseFiles { return fx.without(image) },
			prepare: func(t *testing.T, fx *fixture, payload string) {
				p := filepath.Join(payload, relPath(commitA, "artifacts", stagePrefix+fx.names[image]+"-123"))
				if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			second: func(_ *testing.T, fx *fixture) ReleaseFiles { return fx.files },
			added:  []string{image},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload := t.TempDir()
			fx := newFixture(t, commitA, "https://releases.example/oac/build-"+commitA)
			if err := Publish(payload, tt.first(fx)); err != nil {
				t.Fatal(err)
			}
			if tt.prepare != nil {
				tt.prepare(t, fx, payload)
			}
			before := snapshot(t, payload)
			err := Publish(payload, tt.second(t, fx))
			after := snapshot(t, payload)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("Publish = %v, want %v", err, tt.want)
				}
				if !maps.Equal(before, after) {
					t.Fatalf("a refused publication changed the payload:\nbefore %v\nafter  %v", slicesKeys(before), slicesKeys(after))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range before {
				if strings.Contains(k, stagePrefix) {
					if _, ok := after[k]; ok {
						t.Errorf("staging file %s left behind", k)
					}
					continue
				}
				if after[k] != v {
					t.Errorf("%s changed", k)
				}
			}
			for _, p := range tt.added {
				name := fx.names[p]
				if after[relPath(commitA, "artifacts", name)] != string(fx.content[name]) {
					t.Errorf("artifact %s not added", name)
				}
			}
			if n := len(after) - len(before); n > len(tt.added) {
				t.Errorf("%d files added, want %d", n, len(tt.added))
			}
		})
	}
}

func TestPublishRefusesInvalidRelease(t *testing.T) {
	fx := newFixture(t, commitA, "")
	tests := []struct {
		name  string
		files func(t *testing.T) ReleaseFiles
		want  error
	}{
		{"manifest missing", func(t *testing.T) ReleaseFiles {
			f := fx.without()
			f.Files = maps.Clone(f.Files)
			delete(f.Files, release.ManifestName)
			return f
		}, ErrInvalidRelease},
		{"seccomp missing", func(t *testing.T) ReleaseFiles {
			f := fx.without()
			f.Files = maps.Clone(f.Files)
			delete(f.Files, release.SeccompName)
			return f
		}, ErrInvalidRelease},
		{"manifest not matching SHA256SUMS", func(t *testing.T) ReleaseFiles {
			f := fx.without()
			f.Files = maps.Clone(f.Files)
			f.Files[release.ManifestName] = append([]byte(nil), append(f.Files[release.ManifestName], ' ')...)
			return f
		}, release.ErrChecksumMismatch},
		{"installer not matching SHA256SUMS", func(t *testing.T) ReleaseFiles {
			f := fx.without()
			f.Files = maps.Clone(f.Files)
			f.Files[release.InstallerName] = []byte("other")
			return f
		}, release.ErrChecksumMismatch},
		{"file not listed", func(t *testing.T) ReleaseFiles {
			f := fx.without()
			f.Files = maps.Clone(f.Files)
			f.Files[release.LegacyInstallerName] = []byte("pyz")
			return f
		}, ErrInvalidRelease},
		{"listed file not offered", func(t *testing.T) ReleaseFiles {
			f := fx.without()
			f.Files = maps.Clone(f.Files)
			delete(f.Files, release.InstallerName)
			return f
		}, ErrInvalidRelease},
		{"not a fixed name", func(t *testing.T) ReleaseFiles {
			return fx.withFile(t, "README", []byte("x"))
		}, ErrInvalidRelease},
		{"artifact not declared", func(t *testing.T) ReleaseFiles {
			f := fx.without()
			f.Artifacts["oac-"+commitA+"-linux-amd64-other"] = f.Artifacts[fx.names[release.PathNode]]
			return f
		}, ErrInvalidRelease},
		{"artifact declared outside the catalog", func(t *testing.T) ReleaseFiles {
			f := fx.without()
			f.Artifacts[release.FileName(commitA, "daemon")] = f.Artifacts[fx.names[release.PathNode]]
			return f
		}, ErrInvalidRelease},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload := filepath.Join(t.TempDir(), "payload")
			err := Publish(payload, tt.files(t))
			if !errors.Is(err, tt.want) {
				t.Fatalf("Publish = %v, want %v", err, tt.want)
			}
			if _, err := os.Stat(payload); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("payload directory created by a refused publication")
			}
		})
	}
}

func TestActivate(t *testing.T) {
	payload := t.TempDir()
	a := newFixture(t, commitA, "")
	b := newFixture(t, commitB, "")
	if err := Activate(payload, commitA); !errors.Is(err, ErrNotPublished) {
		t.Fatalf("Activate of an unpublished release = %v", err)
	}
	if err := Activate(payload, "latest"); !errors.Is(err, ErrNotPublished) {
		t.Fatalf("Activate of a malformed commit = %v", err)
	}
	for _, fx := range []*fixture{a, b} {
		if err := Publish(payload, fx.files); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := ReadActive(payload); err != nil || got != "" {
		t.Fatalf("ReadActive before activation = %q, %v", got, err)
	}
	if err := Activate(payload, commitA); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(payload, ActiveName))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"source_commit":"` + commitA + `"}` + "\n"; string(data) != want {
		t.Fatalf("active.json = %q, want %q", data, want)
	}
	if err := Activate(payload, commitA); err != nil {
		t.Fatalf("Activate of the active release again: %v", err)
	}
	if err := Activate(payload, commitB); !errors.Is(err, ErrActiveRelease) {
		t.Fatalf("Activate of another release = %v, want ErrActiveRelease", err)
	}
	if got, _ := ReadActive(payload); got != commitA {
		t.Fatalf("refused activation moved the pointer to %q", got)
	}
	if err := Switch(payload, commitB); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadActive(payload); got != commitB {
		t.Fatalf("Switch left the pointer at %q", got)
	}
	// A manifest that no longer verifies is not activated.
	sums := filepath.Join(payload, relPath(commitA, release.SumsName))
	if err := os.Chmod(sums, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sums, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Switch(payload, commitA); !errors.Is(err, ErrNotPublished) {
		t.Fatalf("Switch to a broken release = %v", err)
	}
}

func slicesKeys(m map[string]string) []string { return sortedNames(m) }
