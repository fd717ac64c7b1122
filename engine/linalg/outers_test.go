package linalg

import (
	"math/rand"
	"slices"
	"testing"
)

// TestAddOuters: each part of a shared product (ranks 8, 16 and 8, U's columns strided, C's rows padded) is
// bit for bit the Sgemm of its own, for token counts that are and are not whole blocks of the sweep and widths
// with and without a partial strip; parts Sgemm would not send to the skinny kernels (rank 3) too.
func TestAddOuters(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	fill := func(n int) []float32 { return randVec(rng, n) }
	for _, k := range []int{64, 100, 203} {
		for _, n := range []int{32, 37, 576} {
			for _, ranks := range [][]int{{8, 16, 8}, {8}, {3, 8}} {
				ldx := n + 3
				x := fill(k * ldx)
				var parts []OuterPart
				var want [][]float32
				for _, r := range ranks {
					ldu, ldc := r+2, n+1
					p := OuterPart{Rows: r, Alpha: 0.75, U: fill(k * ldu), LDU: ldu, C: fill(r * ldc), LDC: ldc}
					w := slices.Clone(p.C)
					Sgemm(true, false, r, n, k, p.Alpha, p.U, ldu, x, ldx, 1, w, ldc)
					parts, want = append(parts, p), append(want, w)
				}
				AddOuters(k, n, x, ldx, parts)
				for i, p := range parts {
					if !slices.Equal(p.C, want[i]) {
						t.Errorf("k %d, n %d, ranks %v: part %d differs from its Sgemm", k, n, ranks, i)
					}
				}
			}
		}
	}
}

// TestMulTParts: each part of a shared x·Bᵀ (ranks 8, 16 and 3, B's rows and C's rows padded) is bit for bit
// the Sgemm of its own, for row counts that are and are not multiples of 8, and below the shared path's 65.
func TestMulTParts(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	fill := func(n int) []float32 { return randVec(rng, n) }
	for _, m := range []int{64, 70, 203} {
		for _, k := range []int{32, 45, 576} {
			for _, ranks := range [][]int{{8, 16, 3}, {8}, {1, 8}} {
				ldx := k + 1
				x := fill(m * ldx)
				var parts []TPart
				var want [][]float32
				for _, r := range ranks {
					ldb, ldc := k+2, r+3
					p := TPart{Cols: r, B: fill(r * ldb), LDB: ldb, C: fill(m * ldc), LDC: ldc}
					w := slices.Clone(p.C)
					Sgemm(false, true, m, r, k, 1, x, ldx, p.B, ldb, 0, w, ldc)
					parts, want = append(parts, p), append(want, w)
				}
				MulTParts(m, k, x, ldx, parts)
				for i, p := range parts {
					if !slices.Equal(p.C, want[i]) {
						t.Errorf("m %d, k %d, ranks %v: part %d differs from its Sgemm", m, k, ranks, i)
					}
				}
			}
		}
	}
}
