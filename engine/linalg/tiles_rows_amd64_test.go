package linalg

import (
	"math"
	"math/rand"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestAVX2RowTiles checks the few-row AVX2 tiles against the 6-row kernel on the same panels (the rows
// past r of the packed A hold values that must be ignored), for odd and even kc and both beta paths.
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
				var full [6 * 16]float32
				tile6x16AVX2(kc, &ap[0], &bp[0], &full[0], 16, 1, 0)
				mergeTile(full[:], 16, rows, 16, 0.7, beta, want, ldc)
				got := append([]float32(nil), c0...)
				if beta == 0 {
					for i := range 6 * ldc {
						if i < rows*ldc && i%ldc < 16 {
							got[i] = float32(math.NaN()) // not read
						}
					}
				}
				avx2RowTiles[rows](kc, &ap[0], &bp[0], &got[0], ldc, 0.7, beta)
				for i := range got {
					if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-5*(1+math.Abs(float64(want[i])))) {
						t.Fatalf("rows %d kc %d beta %v: c[%d] = %v, want %v", rows, kc, beta, i, got[i], want[i])
					}
				}
			}
		}
	}
}
