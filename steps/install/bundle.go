package install

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// ErrBundle: the offline bundle cannot be installed from (a refusal before
// any change).
var ErrBundle = noderoot.ErrBundle

// BundleCheck checks an offline bundle (--bundle) before the installation
// changes anything (the layout is generation's, see BundleReleaseDir):
//
//   - the path is absolute, exists and is a directory, and it and every
//     directory above it are root's, no symbolic link, and writable by
//     neither group nor others (a sticky directory such as /tmp is
//     accepted above the bundle);
//   - every directory and file root reads in it is root's and writable by
//     neither group nor others, a regular file with one link opened
//     beneath the bundle without following a link (journal/safefile);
//   - the current release's and the selected release's manifest.json and
//     SHA256SUMS decode strictly and agree, and the selected release is the
//     one Core's specification names, with the same image identities and
//     Runtime digests;
//   - every file the installation copies, and every other file SHA256SUMS
//     lists, holds its declared size and sha256;
//   - the service account (as it will be: its groups include the
//     provider's device group) can reach and read every file it copies.
type BundleCheck struct {
	Dir      string
	Provider string
	Spec     *release.Specification
	// Host is where the account databases are.
	Host layout.Host
}

// Run runs the check; it reads and changes nothing outside the bundle and
// the account databases.
func (c *BundleCheck) Run() Check {
	out := Check{Name: "offline bundle"}
	if err := c.check(); err != nil {
		out.Err = err
		out.Hint = "Make the bundle again on the console host with the command that writes it, copy it as root, and give --bundle its absolute directory"
	}
	return out
}

func (c *BundleCheck) check() error {
	if !filepath.IsAbs(c.Dir) {
		return fmt.Errorf("%w: %q is not an absolute path", ErrBundle, c.Dir)
	}
	dir := filepath.Clean(c.Dir)
	chain, err := dirChain(dir)
	if err != nil {
		return err
	}
	if c.Spec == nil || c.Spec.Runtime == nil {
		return fmt.Errorf("%w: Core's specification names no Runtime release", ErrBundle)
	}
	b, err := safefile.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBundle, err)
	}
	defer b.Close()
	d, err := b.OpenDir(".", noderoot.BundleExpect)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBundle, err)
	}
	d.Close()

	cur, err := noderoot.ReadBundleRelease(b, ".", c.Provider, "")
	if err != nil {
		return fmt.Errorf("%w: the console's release: %w", ErrBundle, err)
	}
	ccommit := cur.Release.Manifest.SourceCommit
	src := c.Spec.Runtime.SourceCommit
	sdir := noderoot.BundleReleaseDir(ccommit, src)
	if sdir != "." {
		for _, rel := range []string{noderoot.BundleReleasesDir, sdir} {
			d, err := b.OpenDir(rel, noderoot.BundleExpect)
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%w %s holds only the Runtime of release %s; Core selected the Runtime of release %s, and the bundle has no %s",
					ErrBundle, dir, ccommit, src, sdir)
			}
			if err != nil {
				return fmt.Errorf("%w: %w", ErrBundle, err)
			}
			d.Close()
		}
	}
	sel := cur
	if sdir != "." {
		if sel, err = noderoot.ReadBundleRelease(b, sdir, c.Provider, src); err != nil {
			return fmt.Errorf("%w: Core's selected release: %w", ErrBundle, err)
		}
	}
	if err := release.MatchRelease(c.Spec, sel.Release.Manifest); err != nil {
		return fmt.Errorf("%w %s: release %s is not the one Core's specification names: %w", ErrBundle, dir, src, err)
	}

	acct, err := c.account()
	if err != nil {
		return err
	}
	// What the service account opens: both releases' metadata and the
	// files it copies.
	var reads []string
	for _, rd := range []string{".", sdir} {
		reads = append(reads, path.Join(rd, release.ManifestName), path.Join(rd, release.SumsName))
	}
	files := noderoot.BundleFiles(cur, sel)
	for _, f := range files {
		if err := checkBundleFile(b, f); err != nil {
			return err
		}
		reads = append(reads, f.Rel)
	}
	// Every other listed file, where the bundle holds it; the installer
	// binaries are not needed to install.
	for _, rd := range []string{".", sdir} {
		md := cur
		if rd != "." {
			md = sel
		}
		for _, p := range md.Release.Sums.Paths() {
			if p == release.SumsName {
				continue
			}
			f := noderoot.BundleFile{Rel: path.Join(rd, p), SHA256: md.Release.Sums[p]}
			err := checkBundleFile(b, f)
			if errors.Is(err, os.ErrNotExist) && (p == release.InstallerName || p == release.LegacyInstallerName) {
				continue
			}
			if err != nil {
				return err
			}
		}
		if rd == sdir {
			break
		}
	}
	for _, rel := range reads {
		if err := acct.canRead(b, chain, rel); err != nil {
			return err
		}
	}
	return nil
}

// CheckBundlePath is the part of BundleCheck that needs no configuration:
// the bundle's directory and every directory above it. The command runs it
// first, before it contacts anything.
func CheckBundlePath(dir string) error {
	if !filepath.IsAbs(dir) {
		return workflow.Refuse(fmt.Errorf("%w: %q is not an absolute path", ErrBundle, dir))
	}
	if _, err := dirChain(filepath.Clean(dir)); err != nil {
		return workflow.Refuse(err)
	}
	return nil
}

// dirChain checks dir and every directory above it: a directory (no link),
// root's, not writable by group or others (above dir a sticky directory may
// be), and returns their stats from / down to dir.
func dirChain(dir string) ([]pathStat, error) {
	var chain []pathStat
	p := "/"
	parts := strings.Split(strings.TrimPrefix(dir, "/"), "/")
	if dir == "/" {
		parts = nil
	}
	for i := -1; i < len(parts); i++ {
		if i >= 0 {
			p = filepath.Join(p, parts[i])
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil, fmt.Errorf("%w: %s does not exist", ErrBundle, p)
			}
			return nil, fmt.Errorf("%w: %s: %w", ErrBundle, p, err)
		}
		last := i == len(parts)-1
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			return nil, fmt.Errorf("%w: %s is a symbolic link; give the directory it names", ErrBundle, p)
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			return nil, fmt.Errorf("%w: %s is a %s, not a directory", ErrBundle, p, safefile.FileType(st.Mode))
		case st.Uid != 0:
			return nil, fmt.Errorf("%w: %s belongs to uid %d, not root: whoever owns it could change the bundle", ErrBundle, p, st.Uid)
		case st.Mode&0o022 != 0 && (last || st.Mode&unix.S_ISVTX == 0):
			return nil, fmt.Errorf("%w: %s is writable by group or others (mode %04o): they could change the bundle", ErrBundle, p, st.Mode&0o7777)
		}
		chain = append(chain, pathStat{path: p, st: st})
	}
	return chain, nil
}

type pathStat struct {
	path string
	st   unix.Stat_t
}

// checkBundleFile checks that the file f.Rel of the bundle is a regular
// file as BundleExpect says, reached through directories that are too,
// and holds f's bytes.
func checkBundleFile(b *safefile.Root, f noderoot.BundleFile) error {
	for d := path.Dir(f.Rel); d != "."; d = path.Dir(d) {
		dir, err := b.OpenDir(d, noderoot.BundleExpect)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s is missing (%w)", ErrBundle, b.Join(f.Rel), os.ErrNotExist)
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBundle, err)
		}
		dir.Close()
	}
	file, err := b.OpenFile(f.Rel, noderoot.BundleExpect)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s is missing (%w)", ErrBundle, b.Join(f.Rel), os.ErrNotExist)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBundle, err)
	}
	defer file.Close()
	h := sha256.New()
	var r io.Reader = file
	if f.Size > 0 {
		r = io.LimitReader(file, f.Size+1)
	}
	n, err := io.CopyBuffer(h, struct{ io.Reader }{r}, make([]byte, 1<<20))
	if err != nil {
		return fmt.Errorf("%w: read %s: %w", ErrBundle, b.Join(f.Rel), err)
	}
	if f.Size > 0 && n != f.Size {
		return fmt.Errorf("%w: %s holds %d bytes, its release declares %d", ErrBundle, b.Join(f.Rel), n, f.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
		return fmt.Errorf("%w: %s has sha256 %s, its release declares %s: %w", ErrBundle, b.Join(f.Rel), got, f.SHA256, release.ErrChecksumMismatch)
	}
	return nil
}

// bundleReader is the service account as the permission bits see it: its
// uid (-1 before it exists) and its groups, including the provider's
// device group the installation adds.
type bundleReader struct {
	uid  int
	gids map[int]bool
}

func (c *BundleCheck) account() (bundleReader, error) {
	dbs := accounts.Under(c.Host.Root)
	r := bundleReader{uid: -1, gids: map[int]bool{}}
	u, err := dbs.LookupUser(layout.Account)
	switch {
	case err == nil:
		r.uid = u.UID
		r.gids[u.GID] = true
		gids, err := dbs.SupplementaryGroups(layout.Account)
		if err != nil {
			return r, fmt.Errorf("the service account's groups: %w", err)
		}
		for _, g := range gids {
			r.gids[g] = true
		}
	case !errors.Is(err, accounts.ErrNotFound):
		return r, fmt.Errorf("the service account: %w", err)
	}
	device := "docker"
	if c.Provider == release.ProviderMicrosandbox {
		device = "kvm"
	}
	if g, err := dbs.LookupGroup(device); err == nil {
		r.gids[g.GID] = true
	}
	return r, nil
}

// allows reports whether the account has the permission bits want (4
// read, 1 search) on st.
func (r bundleReader) allows(st *unix.Stat_t, want uint32) bool {
	m := st.Mode
	switch {
	case r.uid >= 0 && int(st.Uid) == r.uid:
		m >>= 6
	case r.gids[int(st.Gid)]:
		m >>= 3
	}
	return m&want == want
}

// canRead checks that the account reaches rel below the bundle (search
// permission on every directory from /) and reads it.
func (r bundleReader) canRead(b *safefile.Root, chain []pathStat, rel string) error {
	hint := fmt.Errorf("%w: the service account %s cannot read %s", ErrBundle, layout.Account, b.Join(rel))
	for _, d := range chain {
		if !r.allows(&d.st, 1) {
			return fmt.Errorf("%w: %s (mode %04o) is not searchable by it; make the bundle's directories 0755 and its files 0644", hint, d.path, d.st.Mode&0o7777)
		}
	}
	parts := strings.Split(rel, "/")
	cur := ""
	for i, p := range parts {
		cur = path.Join(cur, p)
		st, err := b.Lstat(cur)
		if err != nil {
			return fmt.Errorf("%w: %w", hint, err)
		}
		want, what := uint32(1), "searchable"
		if i == len(parts)-1 {
			want, what = 4, "readable"
		}
		if !r.allows(&st, want) {
			return fmt.Errorf("%w: %s (mode %04o) is not %s by it; make the bundle's directories 0755 and its files 0644", hint, b.Join(cur), st.Mode&0o7777, what)
		}
	}
	return nil
}
