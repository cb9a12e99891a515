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

// part is an open part file and the running hash of its bytes.
type part struct {
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
	f, err := os.OpenFile(p.path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("open part file %s: it is a symbolic link", p.path)
		}
		return nil, fmt.Errorf("open part file %s: %w", p.path, err)
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err == nil && st.Mode().Perm() != 0o600 {
		err = f.Chmod(0o600)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open part file %s: %w", p.path, err)
	}
	// Fd puts the descriptor back in blocking mode once; keep it.
	p.f, p.fd, p.size = f, int(f.Fd()), st.Size()
	p.validator = readValidator(p.valPath)
	return p, nil
}

// readValidator returns the saved validator, or "" when there is none or
// it is unusable.
func readValidator(path string) string {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(f, maxValidator+1))
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
// "" removes it. It is replaced atomically but not fsynced: a validator
// lost or mismatched after a power loss costs a restart (the server
// answers 200 to the If-Range) or, without one, a final checksum
// mismatch, never unverified bytes, and small downloads skip two syncs.
func (p *part) saveValidator(v string) error {
	v = cleanValidator(v)
	if v == p.validator {
		return nil
	}
	if v == "" {
		if err := os.Remove(p.valPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", p.valPath, err)
		}
	} else if err := replaceFile(p.valPath, []byte(v+"\n")); err != nil {
		return fmt.Errorf("save %s: %w", p.valPath, err)
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

// replaceFile writes data to a private temporary file beside path and
// renames it over path.
func replaceFile(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// discard removes the part and its validator.
func (p *part) discard() error {
	p.close()
	var errs []error
	for _, path := range []string{p.path, p.valPath} {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

func (p *part) close() {
	if p.f != nil {
		p.f.Close()
		p.f = nil
	}
}

// sum is the hex sha256 of the part's bytes.
func (p *part) sum() string { return fmt.Sprintf("%x", p.hash.Sum(nil)) }

// onlyReader hides WriteTo/ReadFrom so io.CopyBuffer uses the buffer.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(b []byte) (int, error) { return o.r.Read(b) }
