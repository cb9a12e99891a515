package imagetest

import (
	"crypto/sha256"
	"encoding/binary"
	"io"
	"math/rand/v2"
)

// payload generates deterministic pseudo-random bytes that compress like
// real image content (roughly 2–3× with gzip) rather than not at all (random
// bytes) or trivially (zeros). It stitches slices of a 256 KiB text-like
// dictionary with runs of incompressible noise, so a stream of any length is
// produced at memory-copy speed.
type payload struct {
	rng   *rand.Rand
	dict  []byte
	noise []byte
	left  int64
	cur   []byte
}

const (
	payloadDictSize  = 256 << 10
	payloadNoiseSize = 1 << 18
)

// newPayload returns a reader of n bytes determined by seed.
func newPayload(seed string, n int64) *payload {
	sum := sha256.Sum256([]byte("oac-fixture-payload\x00" + seed))
	var key [32]byte
	copy(key[:], sum[:])
	rng := rand.New(rand.NewChaCha8(key))
	p := &payload{rng: rng, left: n}
	// A vocabulary of short words over a small alphabet, written as lines of
	// text: compresses like source code or configuration files.
	words := make([][]byte, 512)
	for i := range words {
		w := make([]byte, 2+rng.IntN(9))
		for j := range w {
			w[j] = "etaoinshrdlucmfwypvbgkqjxz_0123456789ETAOINSHRDLU"[rng.IntN(48)]
		}
		words[i] = w
	}
	// One random draw picks four words and their separators.
	p.dict = make([]byte, 0, payloadDictSize+64)
	for len(p.dict) < payloadDictSize {
		r := rng.Uint64()
		for range 4 {
			p.dict = append(p.dict, words[r&511]...)
			switch (r >> 9) & 15 {
			case 0:
				p.dict = append(p.dict, '\n')
			case 1:
				p.dict = append(p.dict, '.', ' ')
			default:
				p.dict = append(p.dict, ' ')
			}
			r >>= 13
		}
	}
	p.noise = make([]byte, payloadNoiseSize)
	for i := 0; i < len(p.noise); i += 8 {
		binary.LittleEndian.PutUint64(p.noise[i:], rng.Uint64())
	}
	return p
}

// next picks the next segment: mostly dictionary text, sometimes noise.
func (p *payload) next() []byte {
	n := 256 + p.rng.IntN(3840)
	src := p.dict
	if p.rng.IntN(4) == 0 {
		src = p.noise
		n /= 2
	}
	off := p.rng.IntN(len(src) - n)
	return src[off : off+n]
}

func (p *payload) Read(b []byte) (int, error) {
	if p.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.left {
		b = b[:p.left]
	}
	n := 0
	for n < len(b) {
		if len(p.cur) == 0 {
			p.cur = p.next()
		}
		c := copy(b[n:], p.cur)
		p.cur = p.cur[c:]
		n += c
	}
	p.left -= int64(n)
	return n, nil
}
