//go:build amd64

package linalg

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestSkinny: the skinny kernels compute an adapter's four product forms as the float64 reference does, for
// ranks 1 to 16 (the masks), row counts that are and are not multiples of 8, odd and even k, padded strides,
// alpha ≠ 1 and beta 0 (C seeded with NaN, never read), 1 and 0.5; and every such shape reaches them.
// Each set of kernels this CPU runs is tested (AVX2's on an AVX-512 machine as well).
func TestSkinny(t *testing.T) {
	sets := map[string]*skinnyKernels{}
	if hasAVX512() {
		sets["avx512"] = &skinnyAVX512
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		sets["avx2"] = &skinnyAVX2
	}
	if len(sets) == 0 {
		t.Skip("neither AVX-512 nor AVX2")
	}
	for name, sk := range sets {
		t.Run(name, func(t *testing.T) { testSkinny(t, sk) })
	}
}

func testSkinny(t *testing.T, sk *skinnyKernels) {
	rng := rand.New(rand.NewPCG(3, 4))
	take := func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int,
		beta float32, c []float32, ldc int) {
		if !sk.product(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) {
			t.Fatalf("%v %v %d×%d×%d beta %v: not a skinny product", transA, transB, m, n, k, beta)
		}
	}
	for _, r := range []int{1, 3, 8, 11, 16} {
		for _, tokens := range []int{64, 71, 203} {
			for _, k := range []int{32, 33, 200} {
				for _, pad := range []int{0, 5} {
					// u = x·Aᵀ and du = s·dy·B: tokens × r, beta 0.
					newGemmCase(rng, false, true, tokens, r, k, 1, 0, pad).check(t, "rows Aᵀ", take)
					newGemmCase(rng, false, false, tokens, r, k, 0.75, 0, pad).check(t, "rows B", take)
					if r%8 != 0 || k < skinnyMinRows {
						continue
					}
					// dA += duᵀ·x (r × k, contraction over the tokens) and dB += s·dyᵀ·u (k × r).
					for _, beta := range []float32{0, 1, 0.5} {
						newGemmCase(rng, true, false, r, k, tokens, 1.5, beta, pad).check(t, fmt.Sprint("outer beta ", beta), take)
						newGemmCase(rng, true, false, k, r, tokens, 0.5, beta, pad).check(t, fmt.Sprint("outer transposed beta ", beta), take)
					}
				}
			}
		}
	}
	if sk.product(false, true, 32, 8, 576, 1, make([]float32, 32*576), 576, make([]float32, 8*576), 576, 0, make([]float32, 32*8), 8) {
		t.Error("32 rows (a decoding batch) taken as a skinny product")
	}
}

// BenchmarkSkinny: an adapter's products at the 135M shape for a micro-batch of 1,400 tokens, through Sgemm
// (the skinny kernels: AVX-512's, or AVX2's under GODEBUG=cpu.avx512f=off) and through the blocked path they
// replace.
func BenchmarkSkinny(b *testing.B) {
	const N, in, r = 1400, 576, 8
	x, A, dU := make([]float32, N*in), make([]float32, r*in), make([]float32, N*r)
	for i := range x {
		x[i] = float32(i%13) * 0.01
	}
	for _, form := range []struct {
		name           string
		transA, transB bool
		m, n, k        int
		a              []float32
		lda            int
		bm             []float32
		ldb            int
		beta           float32
		out            []float32
		ldc            int
	}{
		{"xAt", false, true, N, r, in, x, in, A, in, 0, dU, r},
		{"dyB", false, false, N, r, in, x, in, A, r, 0, dU, r},
		{"dAt", true, false, r, in, N, dU, r, x, in, 1, A, in},
		{"dBt", true, false, in, r, N, x, in, dU, r, 1, A, r},
	} {
		for _, path := range []string{"sgemm", "blocked"} {
			b.Run(form.name+"/"+path, func(b *testing.B) {
				f := form
				saved := skinny
				if path == "blocked" {
					skinny = nil
				}
				defer func() { skinny = saved }()
				b.SetBytes(int64(4 * N * in))
				for b.Loop() {
					Sgemm(f.transA, f.transB, f.m, f.n, f.k, 1, f.a, f.lda, f.bm, f.ldb, f.beta, f.out, f.ldc)
				}
				b.ReportMetric(2*float64(f.m*f.n*f.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// TestSweepsAgree: the AVX-512 sweep (16-column strips, zmm) and AVX2's (8 columns, ymm) do the same
// multiply-adds in the same order, so on a CPU with both their outer products agree bit for bit, for widths
// with and without a partial strip of either and token counts across the sweep's blocks of rows.
func TestSweepsAgree(t *testing.T) {
	if !hasAVX512() || !cpu.X86.HasAVX512DQ || !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		t.Skip("needs AVX-512 and AVX2")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	fill := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	for _, k := range []int{64, 97, 203} {
		for _, n := range []int{32, 37, 45, 576} {
			for _, r := range []int{8, 16} {
				ldx, ldu, ldc := n+3, r+1, n+2
				x, u, c := fill(k*ldx), fill(k*ldu), fill(r*ldc)
				got, want := append([]float32(nil), c...), append([]float32(nil), c...)
				skinnyAVX512.outerProduct(r, n, k, 0.75, u, ldu, x, ldx, got, ldc)
				skinnyAVX2.outerProduct(r, n, k, 0.75, u, ldu, x, ldx, want, ldc)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("k %d n %d r %d: c[%d] = %v (AVX-512), %v (AVX2)", k, n, r, i, got[i], want[i])
					}
				}
			}
		}
	}
}
