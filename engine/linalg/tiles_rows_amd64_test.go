package linalg

import (
	"math"
	"math/rand"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestAVX2RowTiles checks the few-row AVX2 tiles against the 6-row kernel on the same panels (the rows
// past r of the packed A hold values that must be ignored), for odd and even kc and both beta paths: bit for
// bit on the r rows, which every tile sums in the same order, and the rows past r left as they were.
func TestAVX2RowTiles(t *testing.T) {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA {
		t.Skip("no AVX2+FMA")
	}
	rng := rand.New(rand.NewSource(9))
	for rows := 1; rows < 6; rows++ {
		for _, kc := range []int{1, 2, 3, 7, 192, 257} {
			for _, beta := range []float32{0, 0.5} {
				ap, bp := randVec(rng, 6*kc), randVec(rng, 16*kc)
				const ldc = 19
				c0 := randVec(rng, 6*ldc)
				want := append([]float32(nil), c0...)
				tile6x16AVX2(kc, &ap[0], &bp[0], &want[0], ldc, 0.7, beta)
				copy(want[rows*ldc:], c0[rows*ldc:])
				got := append([]float32(nil), c0...)
				if beta == 0 {
					for i := range rows * ldc {
						if i%ldc < 16 {
							got[i] = float32(math.NaN()) // not read
						}
					}
				}
				avx2RowTiles[rows](kc, &ap[0], &bp[0], &got[0], ldc, 0.7, beta)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("rows %d kc %d beta %v: c[%d] = %v, want %v", rows, kc, beta, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestAVX2RowTilesBF16 checks the tiles over stored bfloat16 panels against the float32 tiles on the same
// panel widened: the same multiply-adds in the same order, so bit for bit, for every row count.
func TestAVX2RowTilesBF16(t *testing.T) {
	if rowTilesBF16[6] == nil {
		t.Skip("no AVX2+FMA")
	}
	rng := rand.New(rand.NewSource(10))
	for rows := 1; rows <= 6; rows++ {
		for _, kc := range []int{1, 2, 3, 5, 8, 191, 576} {
			for _, beta := range []float32{0, 0.5} {
				ap := randVec(rng, 6*kc)
				b16 := make([]uint16, 16*kc)
				RoundBF16(b16, randVec(rng, 16*kc))
				bp := make([]float32, 16*kc)
				WidenBF16(bp, b16)
				const ldc = 19
				c0 := randVec(rng, 6*ldc)
				want := append([]float32(nil), c0...)
				avx2RowTiles[rows](kc, &ap[0], &bp[0], &want[0], ldc, 0.7, beta)
				got := append([]float32(nil), c0...)
				if beta == 0 {
					for i := range rows * ldc {
						if i%ldc < 16 {
							got[i] = float32(math.NaN()) // not read
						}
					}
				}
				rowTilesBF16[rows](kc, &ap[0], &b16[0], &got[0], ldc, 0.7, beta)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("rows %d kc %d beta %v: c[%d] = %v, want %v", rows, kc, beta, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestAVX2PanelTilesInPlace: the panel tiles of 3 to 6 rows, reading A in place (stride lda), sum bit for bit
// as the bfloat16 row tiles do on the same rows packed, so sgemmBlockedBF16 may take either for a row panel
// (every kc, beta 0 with C not read, and 0.5).
func TestAVX2PanelTilesInPlace(t *testing.T) {
	if rowTilesBF16[6] == nil || panelTilesBF16[6] == nil {
		t.Skip("no AVX2+FMA")
	}
	rng := rand.New(rand.NewSource(11))
	for rows := 3; rows <= 6; rows++ {
		for _, kc := range []int{1, 2, 3, 5, 8, 191, 576} {
			for _, beta := range []float32{0, 0.5} {
				lda := kc + 3
				a := randVec(rng, rows*lda)
				ap := make([]float32, 6*kc)
				packA(ap, a, lda, false, 0, rows, 0, kc, 6)
				b16 := make([]uint16, 16*kc)
				RoundBF16(b16, randVec(rng, 16*kc))
				const ldc = 19
				c0 := randVec(rng, 6*ldc)
				want := append([]float32(nil), c0...)
				rowTilesBF16[rows](kc, &ap[0], &b16[0], &want[0], ldc, 0.7, beta)
				got := append([]float32(nil), c0...)
				if beta == 0 {
					for i := range rows * ldc {
						if i%ldc < 16 {
							got[i] = float32(math.NaN()) // not read
						}
					}
				}
				panelTilesBF16[rows](kc, &a[0], lda, &b16[0], &got[0], ldc, 0.7, beta)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("rows %d kc %d beta %v: c[%d] = %v, want %v", rows, kc, beta, i, got[i], want[i])
					}
				}
			}
		}
	}
}
