package linalg

import (
	"math"
	"math/rand"
	"testing"
)

func TestBF16Conversions(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 100} {
		src := make([]uint16, n)
		x := make([]float32, n)
		for i := range src {
			src[i] = ToBF16(float32(rng.NormFloat64()))
			x[i] = float32(rng.NormFloat64())
		}
		got, want := make([]float32, n), make([]float32, n)
		WidenBF16(got, src)
		widenBF16Generic(want, src)
		var ref float64
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("n=%d: widen[%d] = %v, want %v", n, i, got[i], want[i])
			}
			ref += float64(x[i]) * float64(want[i])
		}
		if d := dotBF16(x, src); math.Abs(float64(d)-ref) > 1e-5*(1+math.Abs(ref)) {
			t.Fatalf("n=%d: dot %v, want %v", n, d, ref)
		}
	}
	for v, want := range map[float32]uint16{1: 0x3f80, -2: 0xc000, 1.00390625: 0x3f80 /* tie → even */, 1.01171875: 0x3f82} {
		if got := ToBF16(v); got != want {
			t.Errorf("ToBF16(%v) = %#x, want %#x", v, got, want)
		}
	}
}

// TestSgemmBF16 compares SgemmBF16 with Sgemm on the widened matrix over the shapes the model issues:
// one row (decoding), a few rows, many rows, both layouts of B, strided operands, alpha and beta.
func TestSgemmBF16(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, tc := range []struct {
		m, n, k        int
		transA, transB bool
	}{
		{1, 300, 70, false, true}, {1, 9, 5, true, true}, {3, 2000, 40, false, true}, {16, 700, 129, false, true},
		{5, 300, 70, true, true}, {8, 1536, 576, false, true}, {17, 64, 33, false, true},
		{40, 1100, 1000, false, true}, {50, 33, 17, true, true}, {1, 300, 70, false, false}, {5, 64, 3000, false, false},
		{37, 129, 2100, true, false}, {200, 96, 48, false, true},
		// The register tiles (AVX-512): rows of A in groups of 4 and a remainder, rows of B past the last
		// whole tile, k with and without a remainder past a multiple of 16.
		{32, 151, 576, false, true}, {64, 1538, 96, false, true}, {2, 7, 16, false, true}, {7, 30, 48, false, true},
		{63, 9, 17, false, true},
		// op(B) = B for many rows: panels widened straight from B's rows (n past and short of the panel width).
		{40, 70, 300, false, false}, {100, 17, 50, false, false}, {33, 1000, 64, true, false},
	} {
		ldb := tc.k + 3
		if !tc.transB {
			ldb = tc.n + 3
		}
		rowsB := tc.n
		if !tc.transB {
			rowsB = tc.k
		}
		lda := tc.k + 1
		if tc.transA {
			lda = tc.m + 1
		}
		rowsA := tc.m
		if tc.transA {
			rowsA = tc.k
		}
		a := randVec(rng, rowsA*lda)
		b16 := make([]uint16, rowsB*ldb)
		RoundBF16(b16, randVec(rng, len(b16)))
		b := make([]float32, len(b16))
		WidenBF16(b, b16)
		c0 := randVec(rng, tc.m*(tc.n+2))
		got, want := append([]float32(nil), c0...), append([]float32(nil), c0...)
		SgemmBF16(tc.transA, tc.transB, tc.m, tc.n, tc.k, 0.7, a, lda, b16, ldb, 0.5, got, tc.n+2)
		Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, 0.7, a, lda, b, ldb, 0.5, want, tc.n+2)
		for i := range want {
			if d := math.Abs(float64(got[i] - want[i])); d > 1e-4*(1+math.Abs(float64(want[i]))) {
				t.Fatalf("%+v: c[%d] = %v, want %v", tc, i, got[i], want[i])
			}
		}
	}
}

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// TestGemvBF16T: the Team's split product equals SgemmBF16's, with and without a partner, over shapes whose
// row counts are and are not whole chunks, many times over (so the partner joins at every point).
func TestGemvBF16T(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for _, team := range []*Team{nil, NewTeam()} {
		for _, s := range []struct{ n, k int }{{1, 5}, {31, 64}, {33, 576}, {1536, 576}, {576, 1536}} {
			ldb := s.k + 2
			b := make([]uint16, s.n*ldb)
			for i := range b {
				b[i] = ToBF16(float32(rng.NormFloat64()))
			}
			x := make([]float32, s.k)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			want := make([]float32, s.n)
			for i := range want {
				want[i] = float32(rng.NormFloat64())
			}
			base := append([]float32(nil), want...)
			SgemmBF16(false, true, 1, s.n, s.k, 0.5, x, s.k, b, ldb, 2, want, s.n)
			for rep := 0; rep < 50; rep++ {
				got := append([]float32(nil), base...)
				GemvBF16T(team, s.n, s.k, 0.5, x, b, ldb, 2, got)
				for j := range got {
					if got[j] != want[j] {
						t.Fatalf("team %v n=%d k=%d: y[%d] = %v, want %v", team != nil, s.n, s.k, j, got[j], want[j])
					}
				}
			}
		}
		team.Close()
	}
}
