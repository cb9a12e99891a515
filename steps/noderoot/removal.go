package noderoot

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// Removal is what collection removes of a generation's release files,
// decided and checked completely before the first deletion.
type Removal struct {
	dir    string   // the release directory, relative to the node root
	files  []string // Runtime files whose bytes a local record proves
	temps  []string // our temporary files next to them (partial downloads, unpack leftovers)
	dirs   []string // subdirectories of a releases/ directory to remove once empty, deepest first
	shared string   // why nothing is removed: the directory is still referenced
}

// PlanRemoval decides what collecting gc removes: nothing when another
// retained configuration uses the same release directory; otherwise every
// Runtime file present there, each hash-checked against the node's local
// proof (the release copies in releases/<src>, or runtime-artifacts.json
// for the node root's original files). An unknown hash, changed bytes, a
// link or a non-regular file refuses (ErrUnprovenFile). The manifests stay.
func PlanRemoval(d Data, gc *GenerationConfig) (*Removal, error) {
	if gc == nil {
		return &Removal{}, nil
	}
	g := d.Identity().Generation
	dir, err := ReleaseRel(d, gc.Config)
	if err != nil {
		return nil, err
	}
	others, err := RetainedConfigs(d, g)
	if err != nil {
		return nil, err
	}
	for _, o := range others {
		odir, err := ReleaseRel(d, o.Config)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrReferenced, o.Where, err)
		}
		if odir == dir {
			return &Removal{dir: dir, shared: fmt.Sprintf("%s (generation %d) uses the same files", o.Where, o.Generation)}, nil
		}
	}
	files, err := provenRuntimeFiles(d, gc, dir)
	if err != nil {
		return nil, err
	}
	r := &Removal{dir: dir}
	for _, f := range files {
		rel := path.Join(dir, f.Rel)
		st, err := CheckFile(d, rel, f)
		if err != nil {
			if errors.Is(err, ErrUnprovenFile) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %w", ErrUnprovenFile, err)
		}
		if st == FileOK {
			r.files = append(r.files, rel)
		}
		temps, err := temporaries(d, rel)
		if err != nil {
			return nil, err
		}
		r.temps = append(r.temps, temps...)
	}
	if dir != "." {
		for _, sub := range []string{"native/bin", "native/microsandbox", "native", "images", "runtime"} {
			r.dirs = append(r.dirs, path.Join(dir, sub))
		}
	}
	return r, nil
}

// provenRuntimeFiles are the Runtime files of a release directory with the
// checksums the node itself recorded. Files no record covers have no
// SHA256 and refuse if present.
func provenRuntimeFiles(d Data, gc *GenerationConfig, dir string) ([]RuntimeFile, error) {
	c := gc.Config
	src := c.Specification.Runtime.SourceCommit
	none := func() []RuntimeFile {
		var out []RuntimeFile
		for _, p := range runtimePaths(c.Provider) {
			out = append(out, RuntimeFile{Rel: p})
		}
		return out
	}
	if dir == "." {
		ra, err := ReadRuntimeArtifacts(d)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnprovenFile, err)
		}
		if ra == nil || ra.SourceCommit != src {
			return none(), nil
		}
		return provenFiles(c.Provider, ra), nil
	}
	exp := safefile.Expect{UID: d.UID(), Mode: 0o600, MaxSize: release.MaxMetadataSize}
	m, merr := d.Root().ReadFile(path.Join(dir, release.ManifestName), exp)
	s, serr := d.Root().ReadFile(path.Join(dir, release.SumsName), exp)
	if errors.Is(merr, os.ErrNotExist) || errors.Is(serr, os.ErrNotExist) {
		return none(), nil
	}
	if err := errors.Join(merr, serr); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnprovenFile, err)
	}
	r, err := release.VerifyRelease(m, s, c.Provider)
	if err == nil {
		err = release.MatchRelease(c.Specification, r.Manifest)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: the release copies in %s: %w", ErrUnprovenFile, dir, err)
	}
	return ReleaseFiles(r), nil
}

// temporaries lists our temporary files next to the Runtime file rel: its
// partial download and validator, an interrupted atomic write's temporary
// file, and for the unpacked archive an interrupted unpack's copies. They
// never hold verified bytes; a link among them refuses.
func temporaries(d Data, rel string) ([]string, error) {
	dir, base := path.Split(rel)
	names := []string{"." + base + ".partial", "." + base + ".partial.validator", "." + base + ".tmp"}
	if base == path.Base(PathUnpacked) {
		matches, _ := filepath.Glob(filepath.Join(d.Node().Root, dir, ".runtime.tar.tmp-*"))
		for _, m := range matches {
			names = append(names, filepath.Base(m))
		}
	}
	var out []string
	for _, n := range names {
		p := path.Join(dir, n)
		fi, err := os.Lstat(filepath.Join(d.Node().Root, p))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: %s is not a regular file", ErrUnprovenFile, filepath.Join(d.Node().Root, p))
		}
		out = append(out, p)
	}
	return out, nil
}

// Shared is why nothing is removed, when the release directory is still
// referenced by another retained configuration; "" otherwise.
func (r *Removal) Shared() string { return r.shared }

// Execute removes what r lists; each removal fsyncs its directory. Files
// already gone are skipped, so an interrupted removal finishes on rerun.
func (r *Removal) Execute(d Data) error {
	for _, rel := range append(append([]string(nil), r.files...), r.temps...) {
		if err := d.Root().Remove(rel); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		safefile.Failpoint("collect-after-remove")
		d.Logf("removed %s", rel)
	}
	for _, rel := range r.dirs {
		p := filepath.Join(d.Node().Root, rel)
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		if err := os.Remove(p); err != nil {
			continue // not empty: something not ours stays, and so does its directory
		}
		if err := safefile.SyncDir(filepath.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}
