package bookkeeping

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

// ErrDamaged is returned for a database file that is not a whole, consistent
// bbolt file: empty, truncated, with no valid meta page, with pages that do
// not add up, or that made bbolt fail while it read it. The file is left as
// it is.
var ErrDamaged = errors.New("installer bookkeeping is damaged")

// DamagedAdvice is what an operator does about a damaged database at path,
// for the refusals and status to print: the bookkeeping is what says which
// account, groups, files and networks the installer made, so nothing
// guesses past it.
func DamagedAdvice(path string, installationID ident.InstallationID) string {
	return fmt.Sprintf("restore %s from a backup of /etc; without one, keep it aside (sudo mv %s %s.damaged) and run "+
		"`sudo oac-node-install --uninstall --installation-id %s --force`, which removes the node but keeps the oac-node account and its groups "+
		"(the record of whether the installer made them is gone): remove those by hand if nothing else uses them",
		path, path, path, installationID)
}

// bbolt's file format, as far as the damage check reads it: two meta pages
// at the start of the file, each a page header followed by the meta.
const (
	pageHeaderSize = 16 // id uint64, flags uint16, count uint16, overflow uint32
	metaMagic      = 0xED0CDAED
	metaVersion    = 2
	// metaSize is magic, version, page size, flags (uint32 each), the root
	// bucket (root page, sequence), the freelist page, the high-water
	// mark, the transaction id (uint64 each) and the checksum.
	metaSize      = 4*4 + 2*8 + 8 + 8 + 8 + 8
	metaSumOffset = metaSize - 8
	minPageSize   = 512
	maxPageSize   = 1 << 16
)

// meta is what the damage check reads of a meta page.
type meta struct {
	pageSize uint32
	root     uint64 // the root bucket's page
	highMark uint64 // pages the file must hold
	txid     uint64
}

// readMeta parses the meta at off of f, or says why it is not one.
func readMeta(f *os.File, off int64) (meta, error) {
	buf := make([]byte, metaSize)
	if _, err := f.ReadAt(buf, off+pageHeaderSize); errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return meta{}, errors.New("the file ends before it")
	} else if err != nil {
		return meta{}, &readError{err}
	}
	le := binary.LittleEndian
	h := fnv.New64a()
	h.Write(buf[:metaSumOffset])
	switch {
	case le.Uint32(buf[0:]) != metaMagic:
		return meta{}, errors.New("no bbolt meta page")
	case le.Uint32(buf[4:]) != metaVersion:
		return meta{}, fmt.Errorf("bbolt format version %d", le.Uint32(buf[4:]))
	case le.Uint64(buf[metaSumOffset:]) != h.Sum64():
		return meta{}, errors.New("meta page checksum mismatch")
	}
	m := meta{pageSize: le.Uint32(buf[8:]), root: le.Uint64(buf[16:]), highMark: le.Uint64(buf[40:]), txid: le.Uint64(buf[48:])}
	if m.pageSize < minPageSize || m.pageSize > maxPageSize || m.pageSize&(m.pageSize-1) != 0 {
		return meta{}, fmt.Errorf("page size %d", m.pageSize)
	}
	return m, nil
}

// readError is a failure to read the file, as opposed to what it holds.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }

// checkFile refuses a database file bbolt would crash on or silently
// rewrite: an empty file (bbolt would initialize it as a new, empty
// database), one without a valid meta page, and one shorter than the pages
// its newest valid meta names (bbolt maps the file and would die of SIGBUS
// reading past its end). It reads only the two meta pages.
func checkFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return fmt.Errorf("%w: the file is empty", ErrDamaged)
	}
	m0, err0 := readMeta(f, 0)
	var re *readError
	if errors.As(err0, &re) {
		return re.err // a file that cannot be read is not known to be damaged
	}
	var m1 meta
	err1 := errors.New("no second meta page")
	if err0 == nil {
		m1, err1 = readMeta(f, int64(m0.pageSize))
	} else {
		// The first meta is gone; bbolt reads the second at the page
		// size it finds there, so try the sizes it could have.
		for ps := int64(minPageSize); ps <= maxPageSize && err1 != nil; ps *= 2 {
			if m1, err1 = readMeta(f, ps); err1 == nil && int64(m1.pageSize) != ps {
				err1 = errors.New("second meta page at another page size")
			}
		}
	}
	if errors.As(err1, &re) {
		return re.err
	}
	var m meta
	switch {
	case err0 == nil && err1 == nil:
		m = m0
		if m1.txid > m0.txid {
			m = m1
		}
	case err0 == nil:
		m = m0
	case err1 == nil:
		m = m1
	default:
		return fmt.Errorf("%w: neither meta page is valid (%v; %v)", ErrDamaged, err0, err1)
	}
	need := int64(m.highMark) * int64(m.pageSize)
	if m.highMark < 4 || fi.Size() < need {
		return fmt.Errorf("%w: the file holds %d bytes, its meta page names %d pages of %d bytes (%d bytes): it was truncated",
			ErrDamaged, fi.Size(), m.highMark, m.pageSize, need)
	}
	if need > maxFile {
		return fmt.Errorf("%w: its meta page names %d bytes of pages, more than installer bookkeeping ever holds", ErrDamaged, need)
	}
	data := make([]byte, need)
	if _, err := f.ReadAt(data, 0); err != nil {
		return err
	}
	if err := checkTree(data, m); err != nil {
		return fmt.Errorf("%w: %v", ErrDamaged, err)
	}
	return nil
}

// maxFile bounds the pages checkTree reads: the bookkeeping of a host is a
// few pages.
const maxFile = 64 << 20

// bbolt's page flags and element layout.
const (
	branchPage   = 0x01
	leafPage     = 0x02
	elementSize  = 16 // branch: pos, ksize uint32, pgid uint64; leaf: flags, pos, ksize, vsize uint32
	bucketLeaf   = 0x01
	inBucketSize = 16 // root pgid, sequence uint64
	maxTreeDepth = 64
)

// checkTree walks every bucket's B+tree from the meta's root, as bbolt will
// read it, and refuses what would make bbolt read outside the file or the
// page: a page id past the high-water mark, a page of the wrong kind, an
// element or a key or value past its page's end, a page reached twice.
// bbolt trusts these numbers; a flipped byte in one of them otherwise
// crashes the process (SIGSEGV, SIGBUS) rather than return an error.
func checkTree(data []byte, m meta) error {
	le := binary.LittleEndian
	ps := int(m.pageSize)
	seen := map[uint64]bool{}
	var page func(id uint64, depth int) error
	var bucket func(v []byte, depth int) error
	// elements returns the page's bytes and its element count, checked.
	elements := func(p []byte, off int) (int, error) {
		count := int(le.Uint16(p[off+10:]))
		if off+pageHeaderSize+count*elementSize > len(p) {
			return 0, fmt.Errorf("%d elements overrun their page", count)
		}
		return count, nil
	}
	node := func(p []byte, off, depth int) error {
		flags := le.Uint16(p[off+8:])
		count, err := elements(p, off)
		if err != nil {
			return err
		}
		for i := range count {
			e := off + pageHeaderSize + i*elementSize
			switch flags {
			case branchPage:
				pos, ksize := int(le.Uint32(p[e:])), int(le.Uint32(p[e+4:]))
				if e+pos+ksize > len(p) || pos < 0 || ksize < 0 {
					return fmt.Errorf("branch key %d past its page", i)
				}
				if err := page(le.Uint64(p[e+8:]), depth+1); err != nil {
					return err
				}
			case leafPage:
				lflags, pos, ksize, vsize := le.Uint32(p[e:]), int(le.Uint32(p[e+4:])), int(le.Uint32(p[e+8:])), int(le.Uint32(p[e+12:]))
				end := e + pos + ksize + vsize
				if pos < 0 || ksize < 0 || vsize < 0 || end > len(p) || end < e {
					return fmt.Errorf("leaf element %d past its page", i)
				}
				if lflags&bucketLeaf != 0 {
					if err := bucket(p[e+pos+ksize:end], depth+1); err != nil {
						return err
					}
				}
			default:
				return fmt.Errorf("a page with flags %#x inside a bucket", flags)
			}
		}
		return nil
	}
	page = func(id uint64, depth int) error {
		if depth > maxTreeDepth {
			return errors.New("a bucket tree too deep")
		}
		if id < 2 || id >= m.highMark || seen[id] {
			return fmt.Errorf("page %d referenced out of place", id)
		}
		seen[id] = true
		off := int(id) * ps
		overflow := int(le.Uint32(data[off+12:]))
		if le.Uint64(data[off:]) != id || uint64(id)+uint64(overflow) >= m.highMark {
			return fmt.Errorf("page %d is not where it is referenced", id)
		}
		return node(data[off:off+(overflow+1)*ps], 0, depth)
	}
	bucket = func(v []byte, depth int) error {
		if len(v) < inBucketSize {
			return errors.New("a bucket value too short")
		}
		if root := le.Uint64(v); root != 0 {
			return page(root, depth)
		}
		// An inline bucket: its one leaf page follows the header.
		if len(v) < inBucketSize+pageHeaderSize {
			return errors.New("an inline bucket too short")
		}
		return node(v, inBucketSize, depth)
	}
	return page(m.root, 0)
}

// checkPages runs bbolt's own consistency check (every page reachable or
// free, once) over the open database. The bookkeeping is a few pages, so
// this costs little on every open.
func checkPages(bdb *bolt.DB) error {
	return guard(func() error {
		return bdb.View(func(tx *bolt.Tx) error {
			var errs []error
			for err := range tx.Check() {
				errs = append(errs, err)
			}
			if len(errs) > 0 {
				return fmt.Errorf("%w: %v", ErrDamaged, errors.Join(errs...))
			}
			return nil
		})
	})
}

// guard runs fn, which reads or writes the database, turning a panic or a
// fault on the mapped file (bbolt's answer to pages it cannot make sense
// of) into ErrDamaged.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: reading it failed: %v", ErrDamaged, r)
		}
	}()
	return fn()
}

// ErrHoldsNothing is returned by OpenReadOnly for a database file that
// provably never held a record (heldNothing): the installer's own first run
// stopped while creating it (a full disk, a crash). It matches
// fs.ErrNotExist, since a host with such a file is a host without
// bookkeeping; Open replaces the file.
var ErrHoldsNothing = fmt.Errorf("installer bookkeeping holds nothing yet: its creation was interrupted (%w)", fs.ErrNotExist)

// heldNothing reports whether the file at path provably never held a
// record: it is empty, or its newest valid meta page is one bbolt writes
// when it creates a file (transaction id 0 or 1) — the schema, which the
// first transaction writes before any record, was never committed.
// Anything else, damaged or not, is not known to be empty. The file must
// also be alone in its directory: the first run creates it before it
// writes any host record or environment file next to it, so a file
// beside them is one that held records (an emptied file on an installed
// host, lost by the file system) and is damaged, never made anew.
func heldNothing(path string) bool {
	names, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return false
	}
	for _, n := range names {
		if n.Name() != filepath.Base(path) {
			return false
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	if fi.Size() == 0 {
		return true
	}
	m0, err0 := readMeta(f, 0)
	if err0 != nil {
		return false
	}
	newest := m0.txid
	if m1, err1 := readMeta(f, int64(m0.pageSize)); err1 == nil {
		newest = max(newest, m1.txid)
	} else if _, ok := err1.(*readError); ok {
		return false
	}
	return newest <= 1
}
