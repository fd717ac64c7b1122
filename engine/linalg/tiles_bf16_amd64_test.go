package linalg

import (
	"math"
	"math/rand"
	"testing"

	"golang.org/x/sys/cpu"
)

// tileSets are the tiles this CPU can run: AVX2's on an AVX-512 machine too, so both are tested wherever
// AVX-512 is.
func tileSets() map[string]tileSet {
	sets := map[string]tileSet{}
	if cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL {
		sets["avx512"] = tileSet{rows: 4, lanes: 16, kernels: [5]tileKernel{1: dotTile1x4BF16AVX512,
			2: dotTile2x4BF16AVX512, 3: dotTile3x4BF16AVX512, 4: dotTile4x4BF16AVX512}}
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		sets["avx2"] = tileSet{rows: 3, lanes: 8, kernels: [5]tileKernel{1: dotTile1x4BF16AVX2,
			2: dotTile2x4BF16AVX2, 3: dotTile3x4BF16AVX2}}
	}
	return sets
}

// TestTilesBF16 checks every tile set of the CPU against the float32 product of the widened weights, for
// row counts that fill tiles and leave remainders, rows of B past the last whole tile, and k with and
// without a remainder past the lanes; beta 0 overwrites C whatever it held.
func TestTilesBF16(t *testing.T) {
	saved := tiles
	defer func() { tiles = saved }()
	rng := rand.New(rand.NewSource(4))
	for name, ts := range tileSets() {
		tiles = ts
		for _, s := range []struct{ m, n, k int }{{2, 4, 16}, {3, 9, 8}, {4, 30, 576}, {5, 17, 33}, {7, 64, 100},
			{13, 7, 40}, {32, 151, 576}, {64, 66, 24}} {
			for _, beta := range []float32{0, 0.5} {
				lda, ldb, ldc := s.k+1, s.k+3, s.n+2
				a := randVec(rng, s.m*lda)
				b16 := make([]uint16, s.n*ldb)
				RoundBF16(b16, randVec(rng, len(b16)))
				b := make([]float32, len(b16))
				WidenBF16(b, b16)
				got := randVec(rng, s.m*ldc)
				want := append([]float32(nil), got...)
				if beta == 0 {
					for i := range got {
						got[i] = float32(math.NaN())
					}
				}
				tilesBF16Asm(s.m, s.n, s.k, 0.7, a, lda, b16, ldb, beta, got, ldc)
				Sgemm(false, true, s.m, s.n, s.k, 0.7, a, lda, b, ldb, beta, want, ldc)
				for i := 0; i < s.m; i++ {
					for j := 0; j < s.n; j++ {
						g, w := got[i*ldc+j], want[i*ldc+j]
						if d := math.Abs(float64(g - w)); !(d <= 1e-4*(1+math.Abs(float64(w)))) {
							t.Fatalf("%s %+v beta %g: c[%d][%d] = %v, want %v", name, s, beta, i, j, g, w)
						}
					}
				}
			}
		}
	}
}

// BenchmarkTilesBF16 compares the CPU's tile sets on a decoding step's MLP product (32 × 1536 × 576);
// run with GOMAXPROCS=1 for one core's rate.
func BenchmarkTilesBF16(b *testing.B) {
	saved := tiles
	defer func() { tiles = saved }()
	const m, n, k = 32, 1536, 576
	rng := rand.New(rand.NewSource(1))
	a := randVec(rng, m*k)
	w := make([]uint16, n*k)
	RoundBF16(w, randVec(rng, n*k))
	c := make([]float32, m*n)
	for name, ts := range tileSets() {
		b.Run(name, func(b *testing.B) {
			tiles = ts
			for b.Loop() {
				tilesBF16Asm(m, n, k, 1, a, k, w, k, 0, c, n)
			}
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
	if tilesDot != nil {
		b.Run("avx512_bf16", func(b *testing.B) {
			for b.Loop() {
				tilesDot(m, n, k, 1, a, k, w, k, 0, c, n)
			}
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// TestTilesBF16Dot checks the bfloat16 dot-product tiles (on a CPU with avx512_bf16) against the float32
// product of the same values: the activations rounded to bfloat16 first, as the tiles round them.
func TestTilesBF16Dot(t *testing.T) {
	if tilesDot == nil {
		t.Skip("no avx512_bf16")
	}
	defer SetBF16Dot(BF16Dot()) // on, whether or not they pay on this CPU (BF16Pays)
	SetBF16Dot(true)
	rng := rand.New(rand.NewSource(5))
	for _, s := range []struct{ m, n, k int }{{2, 4, 32}, {3, 9, 40}, {4, 30, 576}, {5, 17, 33}, {7, 64, 100},
		{32, 151, 576}, {64, 66, 1536}, {2, 3, 64}} {
		for _, beta := range []float32{0, 0.5} {
			lda, ldb, ldc := s.k+1, s.k+3, s.n+2
			a := randVec(rng, s.m*lda)
			a16 := make([]uint16, len(a))
			RoundBF16(a16, a)
			ar := make([]float32, len(a))
			WidenBF16(ar, a16)
			b16 := make([]uint16, s.n*ldb)
			RoundBF16(b16, randVec(rng, len(b16)))
			b := make([]float32, len(b16))
			WidenBF16(b, b16)
			got := randVec(rng, s.m*ldc)
			want := append([]float32(nil), got...)
			SgemmBF16Infer(false, true, s.m, s.n, s.k, 0.7, a, lda, b16, ldb, beta, got, ldc)
			Sgemm(false, true, s.m, s.n, s.k, 0.7, ar, lda, b, ldb, beta, want, ldc)
			for i := 0; i < s.m; i++ {
				for j := 0; j < s.n; j++ {
					g, w := got[i*ldc+j], want[i*ldc+j]
					if d := math.Abs(float64(g - w)); !(d <= 1e-4*(1+math.Abs(float64(w)))) {
						t.Fatalf("%+v beta %g: c[%d][%d] = %v, want %v", s, beta, i, j, g, w)
					}
				}
			}
		}
	}
	// RoundBF16's vector form agrees with ToBF16 on every value it is given (ties to even included).
	src := randVec(rng, 4096)
	src[0], src[1] = math.Float32frombits(0x3f808000), math.Float32frombits(0x3f818000) // ties
	got := make([]uint16, len(src))
	roundBF16AVX512(&got[0], &src[0], len(src), 64)
	for i, v := range src {
		if got[i] != ToBF16(v) {
			t.Fatalf("round %v: %#x, want %#x", v, got[i], ToBF16(v))
		}
	}
	if !SetBF16Dot(false) && BF16Dot() {
		t.Fatal("SetBF16Dot(false) left it on")
	}
}
