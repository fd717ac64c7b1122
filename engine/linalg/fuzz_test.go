package linalg

import (
	"math/rand/v2"
	"testing"
)

// FuzzSgemm checks random shapes, transpositions, strides and scalars against the float64 reference, through
// the public entry point and through the packed path of every kernel. Run with go test -fuzz FuzzSgemm.
func FuzzSgemm(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(1), false, false, uint8(0), uint8(0), uint64(1))
	f.Add(uint8(15), uint8(33), uint8(7), true, false, uint8(2), uint8(1), uint64(2))
	f.Add(uint8(29), uint8(1), uint8(70), false, true, uint8(1), uint8(2), uint64(3))
	f.Add(uint8(1), uint8(65), uint8(3), true, true, uint8(3), uint8(3), uint64(4))
	f.Fuzz(func(t *testing.T, m, n, k uint8, tA, tB bool, pad, sc uint8, seed uint64) {
		rng := rand.New(rand.NewPCG(seed, 99))
		scalars := [][2]float32{{1, 0}, {1, 1}, {-2, 0.5}, {0, 3}}
		s := scalars[int(sc)%len(scalars)]
		g := newGemmCase(rng, tA, tB, int(m%80), int(n%80), int(k%80), s[0], s[1], int(pad%4))
		g.check(t, "Sgemm", Sgemm)
		for _, kern := range allKernels() {
			g.check(t, kern.name, packedWith(kern, 2))
		}
	})
}

// TestSgemmBadArguments checks that inconsistent shapes panic with a message instead of corrupting memory.
func TestSgemmBadArguments(t *testing.T) {
	t.Parallel()
	buf := make([]float32, 64)
	cases := map[string]func(){
		"negative m":   func() { Sgemm(false, false, -1, 2, 2, 1, buf, 2, buf, 2, 0, buf, 2) },
		"short A":      func() { Sgemm(false, false, 8, 8, 9, 1, buf, 9, buf, 8, 0, buf, 8) },
		"small lda":    func() { Sgemm(false, false, 2, 2, 4, 1, buf, 3, buf, 2, 0, buf, 2) },
		"small ldb Bt": func() { Sgemm(false, true, 2, 2, 4, 1, buf, 4, buf, 3, 0, buf, 2) },
		"short C":      func() { Sgemm(false, false, 8, 9, 1, 1, buf, 1, buf, 9, 0, buf, 9) },
	}
	for name, f := range cases {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Sgemm did not panic", name)
				}
			}()
			f()
		}()
	}
}
