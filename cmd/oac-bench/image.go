package main

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/image/imagetest"
)

// The image measure: image identity of a 512 MiB fixture Runtime image
// archive (runtime.tar; its runtime.tar.gz is about 230 MiB: built with the
// fixture builder, a gzip-realistic payload, gzip.BestSpeed), against a
// plain gunzip + sha256 of the same runtime.tar.gz in Go (gzip.Reader over
// a 1 MiB bufio.Reader, sha256 of the decompressed stream, 1 MiB copy
// buffer), measured in the same run:
//
//	(a) UnpackIdentify: one pass that writes runtime.tar (temp file, fsync,
//	    rename), checks its size and sha256, and derives and verifies both
//	    identities from it; then Identity.Check against the manifest's;
//	(c) VerifyArchive: the Docker import's proof, one read of runtime.tar.gz
//	    (its sha256, the unpacked sha256, both identities), nothing written;
//	(b) for the note only: Unpack, then Verify reading runtime.tar again
//	    (two passes; no installer path does both: a fresh install runs (a),
//	    a rerun over an existing runtime.tar runs Verify alone, also noted).
//
// (a), (c) and the reference run imageReps times, alternating which goes first,
// (b) once; the best time of each counts, as background load on a shared
// machine only ever adds time.
func init() { register("image", benchImage) }

const (
	// imagePayload makes runtime.tar 512 MiB (plus a few KiB of records).
	imagePayload = 512 << 20
	imageReps    = 4
)

func benchImage(dir string) ([]Result, error) {
	start := time.Now()
	fx, err := imagetest.WriteFixture(dir, imagetest.Options{Label: "oac-bench-image", PayloadSize: imagePayload})
	if err != nil {
		return nil, err
	}
	build := time.Since(start)
	if err := os.Remove(fx.TarPath); err != nil {
		return nil, err
	}
	target := filepath.Join(dir, "unpacked.tar")

	plain := func() error {
		f, err := os.Open(fx.GzPath)
		if err != nil {
			return err
		}
		defer f.Close()
		zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<20))
		if err != nil {
			return err
		}
		h := sha256.New()
		n, err := io.CopyBuffer(h, zr, make([]byte, 1<<20))
		if err != nil {
			return err
		}
		if n != fx.TarSize || hex.EncodeToString(h.Sum(nil)) != fx.TarSHA256 {
			return fmt.Errorf("plain gunzip: %d bytes, another sha256", n)
		}
		return nil
	}
	onePass := func() error {
		defer os.Remove(target)
		id, err := image.UnpackIdentify(fx.GzPath, target, fx.TarSize, fx.TarSHA256)
		if err != nil {
			return err
		}
		return id.Check(fx.Identity)
	}
	// The Docker path's proof: one read of runtime.tar.gz, nothing written.
	archive := func() error {
		f, err := os.Open(fx.GzPath)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = image.VerifyArchive(f, image.Archive{Size: fx.GzSize, SHA256: fx.GzSHA256,
			UnpackedSize: fx.TarSize, UnpackedSHA256: fx.TarSHA256, Want: fx.Identity})
		return err
	}
	var verifyOnly time.Duration
	twoPass := func() error {
		defer os.Remove(target)
		if err := image.Unpack(fx.GzPath, target, fx.TarSize, fx.TarSHA256); err != nil {
			return err
		}
		start := time.Now()
		err := image.Verify(target, fx.ConfigDigest, fx.ManifestDigest)
		verifyOnly = time.Since(start)
		return err
	}

	best := map[string]time.Duration{}
	run := func(name string, f func() error) error {
		start := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if d := time.Since(start); best[name] == 0 || d < best[name] {
			best[name] = d
		}
		return nil
	}
	for i := range imageReps {
		order := []string{"plain", "one", "archive"}
		switch {
		case i == 1:
			order = []string{"two", "archive", "one", "plain"}
		case i%2 == 1:
			order = []string{"archive", "one", "plain"}
		}
		for _, name := range order {
			f := map[string]func() error{"plain": plain, "one": onePass, "two": twoPass, "archive": archive}[name]
			if err := run(name, f); err != nil {
				return nil, err
			}
		}
	}
	ref := best["plain"].Seconds()
	note := fmt.Sprintf("runtime.tar.gz %d MiB → runtime.tar %d MiB, built in %.1fs; plain gunzip+sha256 %.0f MB/s; "+
		"Unpack then Verify (two passes) %.2fs = %.2f×; Verify alone of an existing runtime.tar %.2fs = %.2f×",
		fx.GzSize>>20, fx.TarSize>>20, build.Seconds(), float64(fx.TarSize)/ref/1e6,
		best["two"].Seconds(), best["two"].Seconds()/ref, verifyOnly.Seconds(), verifyOnly.Seconds()/ref)
	return []Result{{
		Name: "identity (UnpackIdentify) vs gunzip+sha256", Ours: best["one"].Seconds(), Reference: ref, Unit: "s",
		Ratio: best["one"].Seconds() / ref, Goal: 1.2, Max: true, Note: note,
	}, {
		Name: "identity (VerifyArchive) vs gunzip+sha256", Ours: best["archive"].Seconds(), Reference: ref, Unit: "s",
		Ratio: best["archive"].Seconds() / ref, Goal: 1.2, Max: true,
		Note: "the Docker path: runtime.tar.gz's sha256 and size, the unpacked sha256 and size and the identity in one read, nothing written",
	}}, nil
}
