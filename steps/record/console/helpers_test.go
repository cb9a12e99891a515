package console

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/record/release/releasetest"
)

const (
	commitA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	commitB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// fixture is a small release: its manifest, offered files, and every
// artifact's bytes in a source directory.
type fixture struct {
	m       *release.Manifest
	files   ReleaseFiles
	content map[string][]byte // file name -> bytes
	names   map[string]string // logical path -> file name
}

// newFixture builds a release of commit whose artifacts live in a new
// temporary directory. baseURL becomes artifact_base_url.
func newFixture(t *testing.T, commit, baseURL string) *fixture {
	t.Helper()
	src := t.TempDir()
	fx := &fixture{content: map[string][]byte{}, names: map[string]string{}}
	artifacts := map[string]string{}
	m := releasetest.MicrosandboxManifest(commit, func(spec release.ArtifactSpec) release.Artifact {
		name := release.FileName(commit, spec.Suffix)
		data := []byte("bytes of " + spec.Path + " in " + commit + "\n")
		a := release.Artifact{Filename: name, SHA256: release.SHA256Hex(data), Size: int64(len(data))}
		if spec.Path == release.PathRuntimeImage {
			a.UnpackedSHA256, a.UnpackedSize = strings.Repeat("4", 64), 1<<20
		}
		p := filepath.Join(src, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		fx.content[name] = data
		fx.names[spec.Path] = name
		artifacts[name] = p
		return a
	})
	m.ArtifactBaseURL = baseURL
	// Declared, but not in the catalog: never served.
	m.Artifacts["native/bin/oac-daemon"] = release.Artifact{Filename: release.FileName(commit, "daemon"), SHA256: strings.Repeat("5", 64), Size: 9}
	fx.m = m
	files, err := releasetest.Files(m, []byte(`{"defaultAction":"SCMP_ACT_ALLOW"}`+"\n"), []byte("installer "+commit))
	if err != nil {
		t.Fatal(err)
	}
	fx.files = ReleaseFiles{Files: files, Artifacts: artifacts}
	return fx
}

// without returns the offered files without the artifacts at the given
// logical paths.
func (fx *fixture) without(paths ...string) ReleaseFiles {
	out := ReleaseFiles{Files: fx.files.Files, Artifacts: map[string]string{}}
	for k, v := range fx.files.Artifacts {
		out.Artifacts[k] = v
	}
	for _, p := range paths {
		delete(out.Artifacts, fx.names[p])
	}
	return out
}

// withFile returns the offered files with one fixed file replaced and
// SHA256SUMS updated to match.
func (fx *fixture) withFile(t *testing.T, name string, data []byte) ReleaseFiles {
	t.Helper()
	files := map[string][]byte{}
	for k, v := range fx.files.Files {
		files[k] = v
	}
	files[name] = data
	sums, err := release.ParseSHA256SUMS(files[release.SumsName])
	if err != nil {
		t.Fatal(err)
	}
	sums[name] = release.SHA256Hex(data)
	if files[release.SumsName], err = sums.Marshal(); err != nil {
		t.Fatal(err)
	}
	return ReleaseFiles{Files: files, Artifacts: fx.files.Artifacts}
}

// snapshot returns every file under dir (relative path -> bytes) and
// fails on a symbolic link.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.Mode()&os.ModeSymlink != 0 {
			t.Fatalf("symbolic link %s", p)
		}
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out[rel] = string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
