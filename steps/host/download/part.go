package download

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// PartPath is the private part file of a download to target.
func PartPath(target string) string {
	dir, base := filepath.Split(target)
	return filepath.Join(dir, "."+base+".partial")
}

// ValidatorPath is the file holding the validator (ETag or Last-Modified)
// of the bytes in target's part file.
func ValidatorPath(target string) string { return PartPath(target) + ".validator" }

// maxValidator bounds a saved validator; longer ones are not saved.
const maxValidator = 1024

// part is an open part file (a pending file of the safe-file layer) and the
// running hash of its bytes.
type part struct {
	root      *safefile.Root // the target's directory
	pending   *safefile.Pending
	f         *os.File
	fd        int
	path      string
	valPath   string
	size      int64  // bytes in the file, all of them in hash
	validator string // saved validator, "" when none
	hash      hash.Hash
	// synced is the offset up to which writeback was started.
	synced int64
}

// openPart opens (creating) the part file of target without following
// links and reads the saved validator. The bytes already in it are not yet
// hashed: see rehash.
func openPart(target string) (*part, error) {
	p := &part{path: PartPath(target), valPath: ValidatorPath(target), hash: sha256.New()}
	root, err := safefile.OpenRootTrusted(filepath.Dir(target))
	if err != nil {
		return nil, fmt.Errorf("open part file %s: %w", p.path, err)
	}
	pending, err := root.OpenPending(filepath.Base(p.path), "download")
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("open part file: %w", err)
	}
	f := pending.File()
	st, err := f.Stat()
	if err != nil {
		pending.Close()
		root.Close()
		return nil, fmt.Errorf("open part file %s: %w", p.path, err)
	}
	p.root, p.pending, p.f, p.fd, p.size = root, pending, f, int(f.Fd()), st.Size()
	p.validator = readValidator(root, filepath.Base(p.valPath))
	return p, nil
}

// readValidator returns the saved validator, or "" when there is none or
// it is unusable.
func readValidator(root *safefile.Root, name string) string {
	b, err := root.ReadFile(name, safefile.Expect{UID: os.Geteuid(), MaxSize: maxValidator + 1})
	if err != nil {
		return ""
	}
	return cleanValidator(string(b))
}

// cleanValidator returns v if it can be sent back as an If-Range value.
func cleanValidator(v string) string {
	v = strings.TrimSpace(v)
	if len(v) > maxValidator {
		return ""
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return ""
		}
	}
	return v
}

// rehash reads the bytes already in the part into the hash, once.
func (p *part) rehash(buf []byte) error {
	p.hash.Reset()
	if _, err := p.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read part file %s: %w", p.path, err)
	}
	n, err := io.CopyBuffer(p.hash, io.LimitReader(onlyReader{p.f}, p.size), buf)
	if err == nil && n != p.size {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return fmt.Errorf("read part file %s: %w", p.path, err)
	}
	p.synced = p.size
	return nil
}

// reset empties the part and forgets its validator, to start from byte 0.
func (p *part) reset() error {
	if err := p.f.Truncate(0); err != nil {
		return fmt.Errorf("truncate part file %s: %w", p.path, err)
	}
	p.size, p.synced = 0, 0
	p.hash.Reset()
	return p.saveValidator("")
}

// saveValidator records the validator of the bytes about to be written;
// "" removes it. It is replaced atomically: a validator lost or mismatched
// after a power loss would cost a restart (the server answers 200 to the
// If-Range) or, without one, a final checksum mismatch, never unverified
// bytes.
func (p *part) saveValidator(v string) error {
	v = cleanValidator(v)
	if v == p.validator {
		return nil
	}
	name := filepath.Base(p.valPath)
	if v == "" {
		if err := p.root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	} else if err := p.root.Write(name, []byte(v+"\n"), 0o600, safefile.WriteOptions{NoPoints: true}); err != nil {
		return fmt.Errorf("save validator: %w", err)
	}
	p.validator = v
	return nil
}

// writeAt writes b at off, from the spool's goroutine. Every 8 MiB it
// starts the writeback of what came before, so that the final fsync finds
// little left to write and the disk works while the network does.
func (p *part) writeAt(b []byte, off int64) error {
	if _, err := p.f.WriteAt(b, off); err != nil {
		return fmt.Errorf("write part file %s: %w", p.path, err)
	}
	if end := off + int64(len(b)); end-p.synced >= writebackChunk {
		// Advisory: a failure here shows again at the final fsync.
		_ = unix.SyncFileRange(p.fd, p.synced, end-p.synced, unix.SYNC_FILE_RANGE_WRITE)
		p.synced = end
	}
	return nil
}

const writebackChunk = 8 << 20

// discard removes the part and its validator.
func (p *part) discard() error {
	var errs []error
	if p.pending != nil {
		errs = append(errs, p.pending.Discard())
		p.pending, p.f = nil, nil
	}
	if err := p.root.Remove(filepath.Base(p.valPath)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// close closes the part file, keeping it, and the directory.
func (p *part) close() {
	if p.pending != nil {
		p.pending.Close()
		p.pending, p.f = nil, nil
	}
	if p.root != nil {
		p.root.Close()
		p.root = nil
	}
}

// sum is the hex sha256 of the part's bytes.
func (p *part) sum() string { return fmt.Sprintf("%x", p.hash.Sum(nil)) }

// onlyReader hides WriteTo/ReadFrom so io.CopyBuffer uses the buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(b []byte) (int, error) { return o.r.Read(b) }
