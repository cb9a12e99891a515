package download

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// LocalSource is a file of a local directory (an offline bundle) that
// CopyLocal copies: Rel is resolved beneath Root without following a
// symbolic link, and the opened file must be what Expect says (a regular
// file with one link, its owner, the mode bits it must not have).
type LocalSource struct {
	Root   *safefile.Root
	Rel    string
	Expect safefile.Expect
}

// CopyLocal publishes the bytes of a local file at req.Target the way
// Download publishes an artifact: a target that already verifies is
// reused, one that differs is a *ConflictError and left alone. Otherwise
// the file is copied into the target's part file (a safefile pending file,
// emptied first: a local copy has nothing worth resuming), hashed while it
// is copied, and published only when the copy has exactly req.Size bytes
// with sha256 req.SHA256: chmod, fsync, rename without replacing anything,
// directory fsync. A source that is a link, not a regular file, of another
// owner, or whose bytes do not match (it changed since it was checked) is
// refused, the part removed; size and checksum mismatches are
// *TransferError (op "copy") matching ErrSize or ErrChecksum, like a
// download's. req.URL is not used. Cancellation of ctx stops the copy
// between chunks.
func CopyLocal(ctx context.Context, src LocalSource, req Request) error {
	_, err := copyLocal(ctx, src, req)
	return err
}

func copyLocal(ctx context.Context, src LocalSource, req Request) (Stats, error) {
	var st Stats
	want, err := req.checkLocal()
	if err != nil {
		return st, err
	}
	name := filepath.Base(req.Target)
	buf := make([]byte, bufSize)
	switch err := verifyTarget(req.Target, req.Size, want, req.Mode, buf); {
	case err == nil:
		st.Reused = true
		removeQuietly(PartPath(req.Target), ValidatorPath(req.Target))
		req.progress(req.Size)
		return st, nil
	case !errors.Is(err, fs.ErrNotExist):
		return st, err
	}
	if src.Root == nil {
		return st, fmt.Errorf("copy %s: no source directory", name)
	}
	in, err := src.Root.OpenFile(src.Rel, src.Expect)
	if err != nil {
		return st, fmt.Errorf("copy %s: %w", name, err)
	}
	defer in.Close()

	p, err := openPart(req.Target)
	if err != nil {
		return st, err
	}
	defer p.close()
	if err := p.reset(); err != nil {
		return st, err
	}
	req.progress(0)
	// Reading one byte beyond the declared size detects a longer file.
	r := io.LimitReader(onlyReader{in}, req.Size+1)
	for {
		if err := ctx.Err(); err != nil {
			return st, errors.Join(fmt.Errorf("copy %s: %w", name, err), p.discard())
		}
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if p.size+int64(n) > req.Size {
				return st, errors.Join(&TransferError{Op: "copy", File: name, Err: fmt.Errorf(
					"%w: %s holds more than the declared %d bytes", ErrSize, src.Root.Join(src.Rel), req.Size)}, p.discard())
			}
			p.hash.Write(buf[:n])
			if err := p.writeAt(buf[:n], p.size); err != nil {
				return st, errors.Join(err, p.discard())
			}
			p.size += int64(n)
			st.Received += int64(n)
			req.progress(p.size)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return st, errors.Join(fmt.Errorf("copy %s: read %s: %w", name, src.Root.Join(src.Rel), rerr), p.discard())
		}
	}
	if p.size != req.Size {
		return st, errors.Join(&TransferError{Op: "copy", File: name, Err: fmt.Errorf(
			"%w: %s holds %d bytes, the release declares %d", ErrSize, src.Root.Join(src.Rel), p.size, req.Size)}, p.discard())
	}
	if got := p.sum(); got != want {
		return st, errors.Join(&TransferError{Op: "copy", File: name, Err: fmt.Errorf(
			"%w: expected sha256 %s, %s holds %s; the copy was discarded", ErrChecksum, want, src.Root.Join(src.Rel), got)}, p.discard())
	}
	return st, p.publish(req.Target, req.Mode, want, buf)
}

// checkLocal validates a local copy's request (no URL) and returns the
// wanted hex digest.
func (r *Request) checkLocal() (string, error) {
	c := *r
	c.URL = "https://local.invalid/"
	return c.check()
}
