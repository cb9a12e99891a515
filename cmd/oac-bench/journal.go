package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal"
)

// The journal measure: durable appends of one small record each, against
// the physical limit of the same file system — a raw loop of write(2) and
// fdatasync(2) of a buffer the size of one frame on a file in the same
// directory, the same number of times. Background I/O on a shared machine
// swings fdatasync latency by tens of percent within seconds, so the two
// run in short alternating blocks (which one goes first alternates too)
// and the result is the median over the block pairs.
func init() { register("journal", benchJournal) }

const (
	journalBenchRecords = 2000 // per side
	journalBenchBlock   = 10   // appends per timed block
	journalBenchPayload = 100
)

func benchJournal(dir string) ([]Result, error) {
	payload := bytes.Repeat([]byte("r"), journalBenchPayload)
	frame := journal.EncodeFrame(payload)

	jpath := filepath.Join(dir, "ours.journal")
	j, err := journal.Create(jpath, 0o600)
	if err != nil {
		return nil, err
	}
	defer os.Remove(jpath)
	defer j.Close()
	rpath := filepath.Join(dir, "raw")
	fd, err := unix.Open(rpath, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_APPEND|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", rpath, err)
	}
	defer os.Remove(rpath)
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		return nil, err
	}
	buf := bytes.Repeat([]byte{0xa5}, len(frame))

	ours := func() (time.Duration, error) {
		start := time.Now()
		for range journalBenchBlock {
			if err := j.Append(payload); err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
	raw := func() (time.Duration, error) {
		start := time.Now()
		for range journalBenchBlock {
			if _, err := unix.Write(fd, buf); err != nil {
				return 0, fmt.Errorf("write %s: %w", rpath, err)
			}
			if err := unix.Fdatasync(fd); err != nil {
				return 0, fmt.Errorf("fdatasync %s: %w", rpath, err)
			}
		}
		return time.Since(start), nil
	}

	blocks := journalBenchRecords / journalBenchBlock
	var oursRates, rawRates, ratios []float64
	for i := range blocks {
		first, second := ours, raw
		if i%2 == 1 {
			first, second = raw, ours
		}
		a, err := first()
		if err != nil {
			return nil, err
		}
		b, err := second()
		if err != nil {
			return nil, err
		}
		o, r := a, b
		if i%2 == 1 {
			o, r = b, a
		}
		oursRates = append(oursRates, journalBenchBlock/o.Seconds())
		rawRates = append(rawRates, journalBenchBlock/r.Seconds())
		ratios = append(ratios, r.Seconds()/o.Seconds())
	}
	return []Result{{
		Name:      fmt.Sprintf("Append %d-byte records, fdatasync each", journalBenchPayload),
		Ours:      journalMedian(oursRates),
		Reference: journalMedian(rawRates),
		Unit:      "ops/s",
		Ratio:     journalMedian(ratios),
		Goal:      0.9,
		Note: fmt.Sprintf("reference: write(2)+fdatasync of %d bytes; ratio is the median of %d alternating block pairs of %d each",
			len(frame), blocks, journalBenchBlock),
	}}, nil
}

func journalMedian(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
