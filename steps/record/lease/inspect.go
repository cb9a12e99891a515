package lease

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

// LeaseState is the state of a generation's lease as Inspect sees it.
type LeaseState string

// Lease states. Every state except StateOK refuses every helper, repair and
// collection of the generation.
const (
	StateOK              LeaseState = "ok"
	StateIdentityMissing LeaseState = "identity-missing" // interrupted initialization; needs inspection
	StateMismatch        LeaseState = "mismatch"         // identity names another installation, generation or specification
	StateInodeReplaced   LeaseState = "inode-replaced"   // the lease path names another inode than its identity
	StateUnsafe          LeaseState = "unsafe"           // link, owner, mode or type refusal of the lease or identity
	StateMalformed       LeaseState = "malformed"        // the identity record is not a valid record
	StateAbsent          LeaseState = "absent"           // no lease file
)

// GenerationReport is what Inspect knows about one generation.
type GenerationReport struct {
	Generation int64       `json:"generation"`
	Lease      LeaseReport `json:"lease"`
	Holders    []Holder    `json:"holders"`
	Records    RecordState `json:"records"`
	// Next lists, for a stuck generation, the checks and commands an
	// operator runs next, in order. Empty when nothing needs a person.
	Next []string `json:"next,omitempty"`
}

// LeaseReport is the lease part of a report.
type LeaseReport struct {
	Path   string     `json:"path"`
	State  LeaseState `json:"state"`
	Reason string     `json:"reason,omitempty"`
	// Device and Inode of the lease file (0 when absent or a link).
	Device uint64 `json:"device,omitempty"`
	Inode  uint64 `json:"inode,omitempty"`
	// LockKey is the file as /proc/locks prints it ("fd:01:1234").
	LockKey string `json:"lock_key,omitempty"`
	// Identity is the identity record, when it could be read.
	Identity *LeaseIdentity `json:"identity,omitempty"`

	// refusal is the error behind State, which the hints classify with
	// errors.Is: a refusal of the lease or, with refusedIdentity, of its
	// identity record; ErrLeaseMissing for an identity record without its
	// lease. Neither field is encoded: the hints are computed where
	// Inspect runs.
	refusal         error
	refusedIdentity bool
}

// RecordState is the record part of a report.
type RecordState struct {
	Preparing     bool `json:"preparing"`
	ImportStarted bool `json:"import_started"`
	Prepared      bool `json:"prepared"` // <g>.json present
	// Base is set for the node's base generation, whose configuration is
	// provider.json rather than <g>.json.
	Base           bool `json:"base,omitempty"`
	Collecting     bool `json:"collecting"`
	NativeComplete bool `json:"native_complete"`
	Dropped        bool `json:"dropped"`
	// Problems lists records present but refused (unsafe or malformed).
	Problems []RecordProblem `json:"problems,omitempty"`
}

// RecordProblem is a record Inspect refused, and why.
type RecordProblem struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// The record kinds Inspect recognizes, as bits.
const (
	hasLease = 1 << iota
	hasIdentity
	hasFinal
	hasPreparing
	hasCollecting
	hasDropped
)

var suffixes = []struct {
	suffix string
	bit    int
}{
	{".lease-identity", hasIdentity},
	{".lease", hasLease},
	{".json", hasFinal},
	{".preparing", hasPreparing},
	{".collecting", hasCollecting},
	{".dropped", hasDropped},
}

// parseGeneration parses a generation number [1-9][0-9]* up to 2^63-1;
// anything else is 0.
func parseGeneration(s string) int64 {
	if s == "" || s[0] < '1' || s[0] > '9' {
		return 0
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0
		}
	}
	g, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	return g
}

// Inspect reports every generation present in dir (the node's
// state/node/generations, owned by uid), from its <g>.lease,
// <g>.lease-identity, <g>.json, <g>.preparing, <g>.collecting and
// <g>.dropped files, sorted by generation. It reads the directory once and
// /proc/locks once; only when a lease is locked does it scan /proc for the
// processes holding it. It changes nothing. The installation is taken from
// the records themselves; use InspectFor to require one.
func Inspect(dir string, uid int) ([]GenerationReport, error) {
	return InspectFor(dir, uid, "")
}

// InspectFor is Inspect with the installation every identity must name
// (empty: none required).
func InspectFor(dir string, uid int, installationID ident.InstallationID) ([]GenerationReport, error) {
	return inspect(dir, uid, installationID, 0, "/proc")
}

// InspectNode is InspectFor for a node whose base generation (the one
// provider.json configures) is base; 0 when the node has none yet.
func InspectNode(dir string, uid int, installationID ident.InstallationID, base int64) ([]GenerationReport, error) {
	return inspect(dir, uid, installationID, base, "/proc")
}

func inspect(dir string, uid int, installationID ident.InstallationID, base int64, proc string) ([]GenerationReport, error) {
	d, err := openDir(dir, uid)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.ReadDir()
	if err != nil {
		return nil, err
	}
	present := map[int64]int{}
	for _, name := range names {
		for _, s := range suffixes {
			if g, ok := strings.CutSuffix(name, s.suffix); ok {
				if n := parseGeneration(g); n > 0 {
					present[n] |= s.bit
				}
				break
			}
		}
	}
	gens := make([]int64, 0, len(present))
	for g := range present {
		gens = append(gens, g)
	}
	sort.Slice(gens, func(i, j int) bool { return gens[i] < gens[j] })

	reports := make([]GenerationReport, len(gens))
	keys := map[string]bool{}
	for i, g := range gens {
		r := &reports[i]
		r.Generation = g
		r.Records.Base = g == base
		ids := inspectRecords(d, uid, r, present[g])
		inspectLease(d, uid, r, present[g], ids, installationID)
		if r.Lease.LockKey != "" {
			keys[r.Lease.LockKey] = true
		}
	}

	locks, err := readProcLocks(proc+"/locks", keys)
	if err != nil {
		return nil, err
	}
	var byFD map[string][]Holder
	if len(locks) > 0 {
		locked := map[string]bool{}
		for k := range locks {
			locked[k] = true
		}
		byFD = descriptorHolders(proc, locked)
	}
	// Hints name the installation's unit; without an expected installation
	// the first readable identity in the directory names it.
	known := installationID
	for i := 0; known == "" && i < len(reports); i++ {
		if id := reports[i].Lease.Identity; id != nil && id.InstallationID.Valid() {
			known = id.InstallationID
		}
	}
	for i := range reports {
		r := &reports[i]
		r.Holders = []Holder{}
		if lines, ok := locks[r.Lease.LockKey]; ok && r.Lease.LockKey != "" {
			r.Holders = holdersOf(proc, lines, byFD[r.Lease.LockKey])
		}
		r.Next = nextSteps(d.Path(), r, known)
	}
	return reports, nil
}

// inspectRecords fills in the record state of r.Generation and returns the
// identities its valid records carry.
func inspectRecords(d *safefile.Root, uid int, r *GenerationReport, has int) []Identity {
	var ids []Identity
	g := r.Generation
	problem := func(name string, err error) {
		r.Records.Problems = append(r.Records.Problems, RecordProblem{Path: d.Join(name), Reason: reason(err)})
	}
	if has&hasFinal != 0 {
		name := finalName(g)
		st, err := d.Lstat(name)
		if err != nil {
			problem(name, err)
		} else if err := safefile.Check(d.Join(name), &st, private(uid, 0)); err != nil {
			problem(name, err)
		} else {
			r.Records.Prepared = true
		}
	}
	if has&hasPreparing != 0 {
		name := preparingName(g)
		if p, err := readKind(d, uid, name, g, maxPreparingRecord, parsePreparing, func(p Preparing) Identity { return p.Identity }); err != nil {
			problem(name, err)
		} else {
			r.Records.Preparing, r.Records.ImportStarted = true, p.ImportStarted
			ids = append(ids, p.Identity)
		}
	}
	if has&hasCollecting != 0 {
		name := collectName(g)
		if c, err := readKind(d, uid, name, g, maxRecord, parseCollecting, func(c Collecting) Identity { return c.Identity }); err != nil {
			problem(name, err)
		} else {
			r.Records.Collecting, r.Records.NativeComplete = true, c.NativeComplete
			ids = append(ids, c.Identity)
		}
	}
	if has&hasDropped != 0 {
		name := droppedName(g)
		if id, err := readKind(d, uid, name, g, maxRecord, parseDropped, func(id Identity) Identity { return id }); err != nil {
			problem(name, err)
		} else {
			r.Records.Dropped = true
			ids = append(ids, id)
		}
	}
	return ids
}

// inspectLease classifies the lease of r.Generation.
// ids are the identities of the generation's other records.
func inspectLease(d *safefile.Root, uid int, r *GenerationReport, has int, ids []Identity, installationID ident.InstallationID) {
	g := r.Generation
	lr := &r.Lease
	lr.Path = d.Join(leaseName(g))
	if has&hasLease == 0 {
		lr.State = StateAbsent
		if has&hasIdentity != 0 {
			lr.Reason, lr.refusal = "identity record present but the lease is missing", ErrLeaseMissing
		}
		return
	}
	st, err := d.Lstat(leaseName(g))
	if err != nil {
		lr.State, lr.Reason, lr.refusal = StateAbsent, reason(err), err
		return
	}
	if st.Mode&unix.S_IFMT != unix.S_IFLNK {
		lr.Device, lr.Inode, lr.LockKey = st.Dev, st.Ino, lockKey(st.Dev, st.Ino)
	}
	if err := safefile.Check(lr.Path, &st, private(uid, 0)); err != nil {
		lr.State, lr.Reason, lr.refusal = StateUnsafe, reason(err), err
		return
	}
	rec, err := readLeaseIdentity(d, uid, g)
	if err != nil {
		lr.refusal, lr.refusedIdentity = err, true
	}
	switch {
	case errors.Is(err, ErrIdentityMissing):
		lr.State, lr.Reason = StateIdentityMissing, "the lease exists but its identity record never became durable (interrupted initialization)"
		return
	case errors.Is(err, ErrUnsafe):
		lr.State, lr.Reason = StateUnsafe, "identity record: "+reason(err)
		return
	case err != nil:
		lr.State, lr.Reason = StateMalformed, "identity record: "+reason(err)
		return
	}
	lr.Identity = &rec
	switch {
	case rec.Device != st.Dev || rec.Inode != st.Ino:
		lr.State = StateInodeReplaced
		lr.Reason = fmt.Sprintf("the identity names device %d inode %d, the lease path names device %d inode %d", rec.Device, rec.Inode, st.Dev, st.Ino)
		return
	case rec.Generation != g:
		lr.State, lr.Reason = StateMismatch, fmt.Sprintf("the identity names generation %d", rec.Generation)
		return
	case installationID != "" && rec.InstallationID != installationID:
		lr.State, lr.Reason = StateMismatch, fmt.Sprintf("the identity names installation %s, expected %s", rec.InstallationID, installationID)
		return
	}
	for _, id := range ids {
		if id != rec.Identity {
			lr.State, lr.Reason = StateMismatch, "the identity differs from the generation's records: "+describeDiff(rec.Identity, id)
			return
		}
	}
	lr.State = StateOK
}

// reason is the operator-facing part of an error: the check and what was
// found, without the path (the report names it).
func reason(err error) string {
	var ce *CheckError
	if errors.As(err, &ce) {
		s := ce.Err.Error()
		if ce.Detail != "" {
			s += ": " + ce.Detail
		}
		return s
	}
	var ue *safefile.UnsafeError
	if errors.As(err, &ue) {
		s := ue.Err.Error()
		if ue.Detail != "" {
			s += ": " + ue.Detail
		}
		return s
	}
	return err.Error()
}
